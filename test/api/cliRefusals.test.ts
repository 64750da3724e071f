import { expect } from 'chai';
import { createStudyWorld, type StudyWorld } from '../helpers/factories.js';
import { sdx } from '../helpers/sdxCli.js';

/** A refusal as `sdx … --json` prints it. */
interface Refused { error: { code: string; message: string; errors?: { message: string }[] } }
import { testDatabase, resetDatabase } from '../helpers/testDatabase.js';

/**
 * Issue 19.5: the command line prints a refusal in the words the API and the portal use, in English
 * or (SDX_LANG=ru) Russian, and never speaks of "this API key" where no key is involved.
 */
describe('command line refusals: the same localized text, worded for a command without a key', () => {
  let world: StudyWorld;

  before(async () => {
    const db = await testDatabase();
    await resetDatabase(db.knex);
    world = await createStudyWorld(db.knex);
  });

  async function inRussian<T>(task: () => Promise<T>): Promise<T> {
    process.env.SDX_LANG = 'ru';
    try {
      return await task();
    } finally {
      delete process.env.SDX_LANG;
    }
  }

  it('an unknown study names the code, not an API key, in English and in Russian', async () => {
    expect((await sdx<Refused>('key', 'list', 'NOPE')).error).to.deep.include({ code: 'study_not_found', message: 'There is no study with the code "NOPE".' });
    expect((await inRussian(() => sdx<Refused>('key', 'list', 'NOPE'))).error).to.deep.include({ code: 'study_not_found', message: 'Исследования с кодом "NOPE" нет.' });
  });

  it('an unknown patient names the study, not the sites of an API key', async () => {
    const refused = await sdx<Refused>('patient', 'consent', world.code, 'NO-ONE', '--given', '2026-01-15');
    expect(refused.error).to.deep.include({ code: 'unknown_subject', message: `Study ${world.code} has no patient "NO-ONE".` });
  });

  it('a design file\'s problems come with their localized messages', async () => {
    const refused = await sdx<Refused>('study', 'load', 'package.json');
    expect(refused.error.code).to.equal('design_invalid');
    expect(refused.error.errors?.length).to.be.above(0);
    for (const e of refused.error.errors ?? []) expect(e.message, JSON.stringify(e)).to.be.a('string').and.not.equal('{message}').and.not.match(/^field\./);
  });
});
