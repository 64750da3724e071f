import { readFileSync } from 'node:fs';
import type { Knex } from 'knex';
import { createApiKey, type NewApiKey } from '../../src/domain/apiKeys/createApiKey.js';
import type { Actor } from '../../src/domain/actor.js';
import { recordConsent } from '../../src/domain/patients/recordConsent.js';
import { grantRole } from '../../src/domain/people/roles.js';
import { addUser } from '../../src/domain/people/users.js';
import { loadStudy } from '../../src/domain/studies/loadStudy.js';
import { parseStudyDesign } from '../../src/domain/studyDesign/parseStudyDesign.js';
import type { StudyDesign } from '../../src/domain/studyDesign/types.js';
import { inTransaction } from '../../src/db/stores.js';

export const operator: Actor = { kind: 'operator', name: 'test' };

/** The demo design, under another code when a test needs a second study. */
export function demoDesign(code = 'DEMO', change: (d: StudyDesign) => void = () => undefined): StudyDesign {
  const design = parseStudyDesign(readFileSync('studies/demo.yaml', 'utf8'));
  design.code = code;
  change(design);
  return design;
}

export interface StudyWorld {
  code: string;
  manager: string;
  /** A key with every right on every site. */
  key: string;
  keyId: number;
}

/**
 * A study with an unblinded manager who may export, and a key with read, write and enrol rights on
 * all sites: built through the same use cases as the command line.
 */
export async function createStudyWorld(knex: Knex, design: StudyDesign = demoDesign()): Promise<StudyWorld> {
  const manager = `manager-${design.code.toLowerCase()}@sdx.test`;
  await inTransaction(knex, async (s) => {
    await loadStudy(s.studies, design);
    await addUser(s.people, { email: manager, name: `Manager ${design.code}` });
    await grantRole(s, operator, { study: design.code, email: manager, role: 'manager', canExport: true, unblinded: true });
  });
  const { key, id } = await makeKey(knex, { study: design.code, by: manager });
  return { code: design.code, manager, key, keyId: id };
}

/** A key; rights default to read, write and enrol on all the maker's sites for 90 days. */
export async function makeKey(knex: Knex, input: Partial<NewApiKey> & { study: string; by: string }): Promise<{ key: string; id: number }> {
  const made = await inTransaction(knex, (s) => createApiKey(s, {
    name: 'Test system', canRead: true, canWrite: true, canEnrol: true, termDays: 90, ...input,
  }));
  return { key: made.key, id: made.id };
}

export async function addPerson(knex: Knex, study: string, email: string, role: { role: 'manager' | 'site_staff'; canExport?: boolean; unblinded?: boolean; sites?: string[] }): Promise<void> {
  const [name = email] = email.split('@');
  await inTransaction(knex, async (s) => {
    await addUser(s.people, { email, name });
    await grantRole(s, operator, { study, email, role: role.role, canExport: role.canExport ?? false, unblinded: role.unblinded ?? false, sites: role.sites });
  });
}

export async function giveConsent(knex: Knex, study: string, subject: string, given = '2020-01-01'): Promise<void> {
  await inTransaction(knex, (s) => recordConsent(s, operator, { study, subject, change: { given } }));
}

/** A key with every right made by a manager who may export but is blinded: it reads no form of the unblinded team. */
export async function makeBlindedKey(knex: Knex, study: string, name: string): Promise<string> {
  const email = 'blinded-manager@sdx.test';
  await addPerson(knex, study, email, { role: 'manager', canExport: true, unblinded: false });
  return (await makeKey(knex, { study, by: email, name })).key;
}
