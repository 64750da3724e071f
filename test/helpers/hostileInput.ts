import { expect } from 'chai';
import fc from 'fast-check';
import type { Knex } from 'knex';
import type { AnswerOf } from './answerTypes.js';
import { createStudyWorld, giveConsent, type StudyWorld } from './factories.js';
import { startTestApp, type Reply, type TestApp } from './testApp.js';
import { only } from './only.js';
import { resetDatabase } from './testDatabase.js';

/**
 * What the hostile-input tests (test/api/hostile*.test.ts) share: strings an attacker sends, the check
 * that an answer leaks nothing of the service's insides, and the rows a refused request must not touch.
 */

/** Injection and template strings, and text that trips naive parsers, escapers and databases. */
export const ATTACK_STRINGS = [
  "'; drop table records; --",
  "' or '1'='1",
  "1); delete from patients where (1=1",
  "'||pg_sleep(5)||'",
  '"; select 1; --',
  '<script>alert(1)</script>',
  '"><img src=x onerror=alert(1)>',
  "javascript:alert('x')",
  '{{7*7}}',
  '${7*7}',
  '<%= 7*7 %>',
  '${jndi:ldap://127.0.0.1/a}',
  '../../../../etc/passwd',
  '%00%2e%2e%2f',
  '\\u0000',
  '$where',
  '__proto__',
  'null',
  '\u202eevil\u202c',
  'Ω≈ç√∫ 日本語 مرحبا 👩‍⚕️',
  'line\u2028separators\u2029',
  'a\r\nSet-Cookie: x=1',
];

/** Any UTF-16 code unit: NUL, controls, and halves of surrogate pairs that `unit: 'binary'` never makes. */
const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));

/** A string an attacker might send: an attack string, any Unicode text, or any code units (NUL, lone surrogates). */
export function hostileString(maxLength = 40): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...ATTACK_STRINGS) },
    { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength }) },
    { weight: 2, arbitrary: fc.string({ unit: codeUnit, maxLength }) },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...ATTACK_STRINGS), fc.string({ unit: codeUnit, maxLength: 3 })).map(([a, b]) => a + b) },
    // What PostgreSQL cannot hold, somewhere in ordinary text.
    { weight: 1, arbitrary: fc.tuple(fc.string({ maxLength: 5 }), fc.constantFrom('\u0000', '\ud800', '\udfff'), fc.string({ maxLength: 5 })).map((parts) => parts.join('')) },
  );
}

/** What PostgreSQL text can hold: no NUL and no half of a surrogate pair (the service refuses the rest). */
export function storable(text: string): boolean {
  return !/[\u0000\p{Cs}]/u.test(text);
}

const STACK_LINE = /\bat .*\(?[^\s()]+\.(?:[cm]?js|ts):\d+:\d+\)?/;

/**
 * The answer is not a server fault and shows nothing of the service's insides: no stack frame, no file
 * of the service, no driver message. (Echoes of what the client sent, in a `detail`, are fine.)
 */
export function expectNoFault(reply: Reply, context = ''): void {
  const text = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body);
  expect(reply.status, `${context} ${text.slice(0, 500)}`).to.be.below(500);
  expect(text, context).not.to.match(STACK_LINE);
  for (const inside of [process.cwd(), 'node_modules', 'knex', 'invalid byte sequence', 'unsupported Unicode escape', 'SyntaxError', 'RangeError', 'TypeError']) {
    expect(text, `${context}: the answer mentions ${inside}`).not.to.include(inside);
  }
  if (reply.status >= 400) expect(reply.headers.get('content-type'), context).to.match(/^application\/problem\+json/);
}

/** The rows a write may leave behind; a refused request must leave every count as it was. */
export async function footprint(knex: Knex): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of ['records', 'queries', 'query_answers', 'audit_events', 'patients', 'fhir_imports']) {
    counts[table] = Number(only(await knex(table).count({ n: '*' }), `the count of ${table}`).n);
  }
  counts.fhir_import_items = await fhirImportItems(knex);
  return counts;
}

/** How many items all FHIR imports hold (each import keeps its items in its own row). */
export async function fhirImportItems(knex: Knex): Promise<number> {
  const { rows: [summed] } = await knex.raw<{ rows: [{ n: number }] }>('select coalesce(sum(json_array_length(items)), 0)::int as n from fhir_imports');
  return summed.n;
}

/** Text as the portal's templates (Eta, autoEscape) write it into a page. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/**
 * A fixed seed: every machine and CI run tries the same cases, so a failure is never a matter of luck. On
 * failure fast-check shrinks the case and prints it with the seed and path that replay it.
 */
export function runs(numRuns: number): fc.Parameters<unknown> {
  return { numRuns, seed: 20261122 };
}

/**
 * The service with a rate limit no property run reaches, on an emptied database holding the test study
 * and one enrolled patient who gave consent, so a valid write is saved and a hostile one has data to harm.
 */
export async function startHostileWorld(): Promise<{ app: TestApp; world: StudyWorld; subject: string }> {
  const app = await startTestApp({ RATE_LIMIT_PER_MINUTE: '100000' });
  await resetDatabase(app.db.knex);
  const world = await createStudyWorld(app.db.knex);
  const enrolled = await app.call<AnswerOf<'createPatient', 201>>('POST', `/api/v1/studies/${world.code}/patients`, {
    key: world.key, body: { site: '01', sex: 'female', birth_year: 1970, enrolled_on: '2026-03-09' },
  });
  await giveConsent(app.db.knex, world.code, enrolled.body.subject, '2026-03-01');
  return { app, world, subject: enrolled.body.subject };
}

