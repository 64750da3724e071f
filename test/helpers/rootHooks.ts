import { closeTestDatabase } from './testDatabase.js';

/** Closes the suite's database once every file has run (and stops the embedded server if no one else uses it). */
export const mochaHooks = {
  async afterAll() {
    await closeTestDatabase();
  },
};
