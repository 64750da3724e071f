import type { Context } from 'mocha';
import { noteCurrentFile, otherFilesScannedProblem } from './responseScan.js';
import { closeTestDatabase } from './testDatabase.js';

/**
 * Notes the file of each running test, so the answers it receives are counted to that file
 * (test/helpers/responseScan.ts); outside tests (in `before` and `after` hooks) they count to none.
 * Once every file has run: fails the run when the privacy file ran but no other file's answer was
 * scanned, and closes the suite's database (stopping the embedded server if no one else uses it).
 */
export const mochaHooks = {
  beforeEach(this: Context) {
    noteCurrentFile(this.currentTest?.file);
  },
  afterEach() {
    noteCurrentFile(undefined);
  },
  async afterAll() {
    try {
      const problem = otherFilesScannedProblem();
      if (problem) throw new Error(problem);
    } finally {
      await closeTestDatabase();
    }
  },
};
