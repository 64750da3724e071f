import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { XMLParser } from 'fast-xml-parser';
import type { AnswerOf } from '../helpers/answerTypes.js';
import { createExportWorld, recordsRead, type ExportWorld } from '../helpers/exportWorld.js';
import { makeKey } from '../helpers/factories.js';
import { only, present } from '../helpers/only.js';
import { startTestApp, type TestApp } from '../helpers/testApp.js';

/**
 * The CDISC ODM 1.3.2 export (exportOdm): validated against the official ODM 1.3.2 schemas
 * (test/fixtures/cdisc-odm-1.3.2) with `xmllint --schema`, read back with an XML parser that knows
 * nothing of ours, every saved value found at its place, and the key's rules applied.
 */

/**
 * The parts of an ODM document the tests read, as fast-xml-parser gives them: attributes as members without
 * a prefix, the elements named in `isArray` as arrays, and numbers and booleans parsed from text.
 */
type OdmScalar = string | number | boolean;
type OdmDef = { OID: string } & Record<string, unknown>;
interface OdmItemDef extends Record<string, unknown> {
  OID: string;
  MeasurementUnitRef?: { MeasurementUnitOID: string };
  RangeCheck?: { Comparator: string; CheckValue: OdmScalar }[];
}
interface OdmItemData {
  ItemOID: string;
  Value?: OdmScalar;
  IsNull?: string;
  Annotation?: { Comment: OdmScalar };
  AuditRecord?: { SourceID: string; UserRef: { UserOID: string } };
}
interface OdmItemGroupData { ItemGroupOID: string; ItemGroupRepeatKey?: OdmScalar; ItemData?: OdmItemData[] }
interface OdmStudyEventData { StudyEventOID: string; StudyEventRepeatKey?: OdmScalar; FormData: { ItemGroupData: OdmItemGroupData[] }[] }
interface OdmSubjectData { SubjectKey: string; SiteRef: { LocationOID: string }; StudyEventData: OdmStudyEventData[] }
interface OdmDocument {
  Study: {
    MetaDataVersion: {
      StudyEventDef: OdmDef[];
      ItemDef: OdmItemDef[];
      ItemGroupDef: OdmDef[];
      CodeList: (OdmDef & { CodeListItem: { CodedValue: string }[] })[];
    };
    BasicDefinitions: { MeasurementUnit: { Name: string }[] };
  };
  ClinicalData?: { SubjectData: OdmSubjectData[] };
  AdminData?: { User: { OID: string; FullName: string }[]; Location: { OID: string }[] };
}
const SCHEMA = 'test/fixtures/cdisc-odm-1.3.2/ODM1-3-2.xsd';

/** xmllint's verdict on a document; --nonet, so the W3C schemas it imports come from the fixtures. */
function xmllint(xml: string): { ok: boolean; output: string } {
  const folder = mkdtempSync(join(tmpdir(), 'sdx-odm-'));
  const file = join(folder, 'export.xml');
  writeFileSync(file, xml);
  try {
    const output = execFileSync('xmllint', ['--noout', '--nonet', '--schema', SCHEMA, file], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    return { ok: true, output };
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string };
    return { ok: false, output: `${failed.stdout ?? ''}${failed.stderr ?? ''}` };
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '',
  isArray: (name) => ['SubjectData', 'StudyEventData', 'FormData', 'ItemGroupData', 'ItemData', 'FormDef', 'ItemDef', 'StudyEventDef', 'User', 'Location', 'CodeList', 'CodeListItem', 'RangeCheck'].includes(name),
});

function parse(xml: string): OdmDocument {
  return (parser.parse(xml) as { ODM: OdmDocument }).ODM;
}

const clinicalData = (odm: OdmDocument) => present(odm.ClinicalData, 'the ClinicalData');
const adminData = (odm: OdmDocument) => present(odm.AdminData, 'the AdminData');

describe('ODM 1.3.2 export (exportOdm)', () => {
  let app: TestApp;
  let world: ExportWorld;
  const code = 'ODMX';
  const base = `/api/v1/studies/${code}`;

  before(async () => {
    app = await startTestApp();
    world = await createExportWorld(app, code);
  });
  after(() => app.close());

  for (const query of ['', '?content=metadata', '?content=data', '?content=all&audit=true']) {
    it(`is valid against the official ODM 1.3.2 schema (${query || 'default'})`, async () => {
      const res = await app.call('GET', `${base}/odm${query}`, { key: world.key });
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.match(/^application\/xml/);
      const verdict = xmllint(res.body as string);
      expect(verdict.ok, verdict.output).to.equal(true);
    });
  }

  it('describes the design: protocol, visits, forms, item groups, items with types, ranges, units and code lists', async () => {
    const odm = parse((await app.call('GET', `${base}/odm?content=metadata`, { key: world.key })).body as string);
    expect(odm.ClinicalData).to.equal(undefined);
    const mdv = odm.Study.MetaDataVersion;
    expect(mdv.StudyEventDef.map((e) => e.OID)).to.deep.equal(['SE.SCREENING', 'SE.BASELINE', 'SE.WEEK4', 'SE.WEEK12', 'SE.UNSCHEDULED']);
    expect(mdv.StudyEventDef.find((e) => e.OID === 'SE.UNSCHEDULED')).to.include({ Repeating: 'Yes', Type: 'Unscheduled' });
    const sbp = present(mdv.ItemDef.find((i) => i.OID === 'IT.VS.SBP'), 'IT.VS.SBP');
    expect(sbp).to.include({ Name: 'sbp', DataType: 'integer' });
    expect(sbp.MeasurementUnitRef?.MeasurementUnitOID).to.equal('MU.mm[Hg]');
    expect(present(sbp.RangeCheck, 'the range checks of IT.VS.SBP').map((r) => [r.Comparator, String(r.CheckValue)])).to.deep.equal([['GE', '70'], ['LE', '220']]);
    expect(mdv.ItemDef.find((i) => i.OID === 'IT.VS.TEMP')).to.include({ DataType: 'float', SignificantDigits: '1' });
    const severity = present(mdv.CodeList.find((c) => c.OID === 'CL.AE.EVENTS.SEVERITY'), 'CL.AE.EVENTS.SEVERITY');
    expect(severity.CodeListItem.map((i) => i.CodedValue)).to.deep.equal(['mild', 'moderate', 'severe']);
    const conditions = present(mdv.ItemGroupDef.find((g) => g.OID === 'IG.MH.CONDITIONS'), 'IG.MH.CONDITIONS');
    expect(conditions.Repeating).to.equal('Yes');
    expect(odm.Study.BasicDefinitions.MeasurementUnit.map((u) => u.Name)).to.include('mm[Hg]');
  });

  for (const who of ['key', 'blindedKey', 'site02Key'] as const) it(`holds every saved value the records read returns, at its place (${who})`, async () => {
    const key = world[who];
    const odm = parse((await app.call('GET', `${base}/odm?content=data`, { key })).body as string);
    const values = new Map<string, string>();
    const marks = new Map<string, string>();
    for (const subject of clinicalData(odm).SubjectData) {
      for (const event of subject.StudyEventData) {
        for (const form of event.FormData) {
          for (const group of form.ItemGroupData) {
            for (const item of group.ItemData ?? []) {
              const where = [subject.SubjectKey, event.StudyEventOID, event.StudyEventRepeatKey, group.ItemGroupOID, group.ItemGroupRepeatKey ?? '', item.ItemOID].join('|');
              if (item.IsNull === 'Yes') marks.set(where, String(present(item.Annotation, `the annotation of ${where}`).Comment));
              else values.set(where, String(item.Value));
            }
          }
        }
      }
    }
    const expectedValues = new Map<string, string>();
    const expectedMarks = new Map<string, string>();
    for (const r of await recordsRead(app, code, key)) {
      const at = (group: string, repeat: string, item: string) => [r.subject, `SE.${r.visit.toUpperCase()}`, String(r.instance), group, repeat, item].join('|');
      const formOid = r.form.toUpperCase();
      for (const [field, value] of Object.entries(r.values as Record<string, string>)) {
        if (value === '') continue;
        const odmValue = field === 'ongoing' ? String(value === 'yes') : value;
        expectedValues.set(at(`IG.${formOid}`, '', `IT.${formOid}.${field.toUpperCase()}`), odmValue);
      }
      for (const [field, mark] of Object.entries(r.not_done as Record<string, string>)) expectedMarks.set(at(`IG.${formOid}`, '', `IT.${formOid}.${field.toUpperCase()}`), mark);
      for (const [table, rows] of Object.entries(r.tables as Record<string, Record<string, string>[]>)) {
        rows.forEach((row, i) => {
          for (const [column, value] of Object.entries(row)) {
            if (value === '') continue;
            const odmValue = ['ongoing', 'serious'].includes(column) ? String(value === 'yes') : value;
            expectedValues.set(at(`IG.${formOid}.${table.toUpperCase()}`, String(i + 1), `IT.${formOid}.${table.toUpperCase()}.${column.toUpperCase()}`), odmValue);
          }
        });
      }
    }
    expect(Object.fromEntries(values)).to.deep.equal(Object.fromEntries(expectedValues));
    expect(Object.fromEntries(marks)).to.deep.equal(Object.fromEntries(expectedMarks));
    expect(expectedValues.size).to.be.above(who === 'site02Key' ? 5 : 30);
    expect([...values.keys()].some((k) => k.startsWith(world.withdrawn))).to.equal(false);
  });

  it('gives each value the audit record of its last change with audit=true', async () => {
    const odm = parse((await app.call('GET', `${base}/odm?content=data&audit=true`, { key: world.key })).body as string);
    const users = new Map(adminData(odm).User.map((u) => [u.OID, u.FullName]));
    const items = clinicalData(odm).SubjectData.flatMap((s) => s.StudyEventData.flatMap((e) =>
      e.FormData.flatMap((f) => f.ItemGroupData.flatMap((g) => g.ItemData ?? []))));
    const hr = present(items.find((i) => i.ItemOID === 'IT.VS.HR' && String(i.Value) === '82'), 'the hr item of 82');
    const audit = present(hr.AuditRecord, 'the audit record of the hr item');
    expect(audit.SourceID).to.match(/^audit_events\/\d+$/);
    expect(users.get(audit.UserRef.UserOID)).to.equal('Test system (API)');
    const auditId = Number(String(audit.SourceID).split('/')[1]);
    const row = present(await app.db.knex('audit_events').where({ id: auditId }).first<{ field_code: string; new_value: string } | undefined>(), `audit event ${auditId}`);
    expect([row.field_code, row.new_value]).to.deep.equal(['hr', '82']);
  });

  it('gives a value the audit record of its own change with audit=true, never that of a later step on a query about it', async () => {
    // sbp 232 opened an automatic query on the field; a second key answers it after the value was saved.
    const queries = await app.call<AnswerOf<'listQueries', 200>>('GET', `${base}/queries?form=vs&visit=screening`, { key: world.key });
    const query = present(queries.body.queries.find((q) => q.field === 'sbp' && q.status === 'open'), 'the open query on sbp');
    const answerer = await makeKey(app.db.knex, { study: code, by: world.manager, name: 'Query desk' });
    const answered = await app.call('POST', `${base}/queries/${query.id}/answers`, { key: answerer.key, body: { text: 'Confirmed against the source document.' } });
    expect(answered.status, JSON.stringify(answered.body)).to.equal(201);

    const odm = parse((await app.call('GET', `${base}/odm?content=data&audit=true`, { key: world.key })).body as string);
    const users = new Map(adminData(odm).User.map((u) => [u.OID, u.FullName]));
    const subject = present(clinicalData(odm).SubjectData.find((s) => s.SubjectKey === query.subject), `the subject ${query.subject}`);
    const sbp = present(subject.StudyEventData.flatMap((e) => e.FormData.flatMap((f) => f.ItemGroupData.flatMap((g) => g.ItemData ?? [])))
      .find((i) => i.ItemOID === 'IT.VS.SBP' && String(i.Value) === '232'), 'the sbp item of 232');
    const audit = present(sbp.AuditRecord, 'the audit record of the sbp item');
    expect(users.get(audit.UserRef.UserOID)).to.equal('Test system (API)');
    const auditId = Number(String(audit.SourceID).split('/')[1]);
    const row = present(await app.db.knex('audit_events').where({ id: auditId }).first<{ action: string; field_code: string; new_value: string } | undefined>(), `audit event ${auditId}`);
    expect([row.action, row.field_code, row.new_value]).to.deep.equal(['record.value_set', 'sbp', '232']);
  });

  it('shows a blinded key no unblinded-team form and a one-site key no other site', async () => {
    const blinded = (await app.call('GET', `${base}/odm`, { key: world.blindedKey })).body as string;
    expect(xmllint(blinded).ok).to.equal(true);
    expect(blinded).to.not.include('IP_ALLOC').and.not.include('K-0042');
    const site02 = parse((await app.call('GET', `${base}/odm?content=data`, { key: world.site02Key })).body as string);
    expect(clinicalData(site02).SubjectData.map((s) => s.SiteRef.LocationOID)).to.deep.equal(['LOC.02']);
    expect(adminData(site02).Location.map((l) => l.OID)).to.deep.equal(['LOC.02']);
  });

  it('enters the export in the read log with its number of records', async () => {
    await app.call('GET', `${base}/odm?content=data`, { key: world.site02Key });
    const log = only(await app.db.knex('read_log').where({ operation: 'odm' }).orderBy('id', 'desc').limit(1).select<{ filters: unknown; rows: number }[]>('filters', 'rows'), 'the last odm read');
    expect([log.filters, log.rows]).to.deep.equal([{ content: 'data' }, 2]);
  });
});
