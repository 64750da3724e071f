import { createStudyWorld, demoDesign, type StudyWorld } from './factories.js';
import { startTestApp, type TestApp } from './testApp.js';
import { resetDatabase } from './testDatabase.js';
import type { StudyDesign } from '../../src/domain/studyDesign/types.js';

export interface StudyWorldOptions {
  /** Configuration the test app runs with (`RATE_LIMIT_PER_MINUTE`, …), over the suite's. */
  env?: NodeJS.ProcessEnv;
  /** The study's design: the demo study (code DEMO) unless a test needs another. */
  design?: StudyDesign;
}

/** The suite's app and study world, read through once the suite's `before` hook has made them. */
export interface UsedStudyWorld {
  app: TestApp;
  world: StudyWorld;
}

/**
 * The set-up most API suites share, as mocha hooks of the calling `describe`: before its tests, the test
 * app starts (with `options.env`), the database is emptied, and one study world is made (the demo design
 * unless `options.design`: a manager, and a key with every right on every site); after them, the app
 * closes. A suite's own `before` hooks, registered after this call, run after it and may use both.
 *
 * `app` and `world` can be destructured at once; each of their members is read at the time a hook or test
 * uses it, and reading one before the hook ran throws, so a test cannot run on a world that is not there.
 */
export function useStudyWorld(options: StudyWorldOptions = {}): UsedStudyWorld {
  let started: { app: TestApp; world: StudyWorld } | undefined;
  const made = () => {
    if (!started) throw new Error('useStudyWorld: the app and the study world are read before the suite’s before hook made them');
    return started;
  };
  before(async () => {
    const app = await startTestApp(options.env);
    await resetDatabase(app.db.knex);
    started = { app, world: await createStudyWorld(app.db.knex, options.design ?? demoDesign()) };
  });
  after(async () => {
    await started?.app.close();
    started = undefined;
  });
  const app: TestApp = {
    get db() { return made().app.db; },
    get baseUrl() { return made().app.baseUrl; },
    call: (method, path, callOptions) => made().app.call(method, path, callOptions),
    close: () => made().app.close(),
  };
  const world: StudyWorld = {
    get code() { return made().world.code; },
    get manager() { return made().world.manager; },
    get key() { return made().world.key; },
    get keyId() { return made().world.keyId; },
  };
  return { app, world };
}
