import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { XMLParser } from 'fast-xml-parser';
import { createExportWorld, recordsRead, type ExportWorld } from '../helpers/exportWorld.js';
import { startTestApp, type TestApp } from '../helpers/testApp.js';

/**
 * The CDISC ODM 1.3.2 export (exportOdm): validated against the official ODM 1.3.2 schemas
 * (test/fixtures/cdisc-odm-1.3.2) with `xmllint --schema`, read back with an XML parser that knows
 * nothing of ours, every saved value found at its place, and the key's rules applied.
 */

type Node = Record<string, any>;
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

function parse(xml: string): Node {
  return parser.parse(xml).ODM as Node;
}

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
    const mdv = odm.Study.MetaDataVersion as Node;
    expect((mdv.StudyEventDef as Node[]).map((e) => e.OID)).to.deep.equal(['SE.SCREENING', 'SE.BASELINE', 'SE.WEEK4', 'SE.WEEK12', 'SE.UNSCHEDULED']);
    expect((mdv.StudyEventDef as Node[]).find((e) => e.OID === 'SE.UNSCHEDULED')).to.include({ Repeating: 'Yes', Type: 'Unscheduled' });
    const sbp = (mdv.ItemDef as Node[]).find((i) => i.OID === 'IT.VS.SBP') as Node;
    expect(sbp).to.include({ Name: 'sbp', DataType: 'integer' });
    expect(sbp.MeasurementUnitRef.MeasurementUnitOID).to.equal('MU.mm[Hg]');
    expect((sbp.RangeCheck as Node[]).map((r) => [r.Comparator, String(r.CheckValue)])).to.deep.equal([['GE', '70'], ['LE', '220']]);
    expect((mdv.ItemDef as Node[]).find((i) => i.OID === 'IT.VS.TEMP')).to.include({ DataType: 'float', SignificantDigits: '1' });
    const severity = (mdv.CodeList as Node[]).find((c) => c.OID === 'CL.AE.EVENTS.SEVERITY') as Node;
    expect((severity.CodeListItem as Node[]).map((i) => i.CodedValue)).to.deep.equal(['mild', 'moderate', 'severe']);
    const conditions = (mdv.ItemGroupDef as Node[]).find((g) => g.OID === 'IG.MH.CONDITIONS') as Node;
    expect(conditions.Repeating).to.equal('Yes');
    expect(odm.Study.BasicDefinitions.MeasurementUnit.map((u: Node) => u.Name)).to.include('mm[Hg]');
  });

  it('holds every saved value the records read returns, at its place', async () => {
    const odm = parse((await app.call('GET', `${base}/odm?content=data`, { key: world.key })).body as string);
    const values = new Map<string, string>();
    const marks = new Map<string, string>();
    for (const subject of odm.ClinicalData.SubjectData as Node[]) {
      for (const event of subject.StudyEventData as Node[]) {
        for (const form of event.FormData as Node[]) {
          for (const group of form.ItemGroupData as Node[]) {
            for (const item of (group.ItemData ?? []) as Node[]) {
              const where = [subject.SubjectKey, event.StudyEventOID, event.StudyEventRepeatKey, group.ItemGroupOID, group.ItemGroupRepeatKey ?? '', item.ItemOID].join('|');
              if (item.IsNull === 'Yes') marks.set(where, String(item.Annotation.Comment));
              else values.set(where, String(item.Value));
            }
          }
        }
      }
    }
    const expectedValues = new Map<string, string>();
    const expectedMarks = new Map<string, string>();
    for (const r of await recordsRead(app, code, world.key)) {
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
    expect(expectedValues.size).to.be.above(30);
    expect([...values.keys()].some((k) => k.startsWith(world.withdrawn))).to.equal(false);
  });

  it('gives each value the audit record of its last change with audit=true', async () => {
    const odm = parse((await app.call('GET', `${base}/odm?content=data&audit=true`, { key: world.key })).body as string);
    const users = new Map((odm.AdminData.User as Node[]).map((u) => [u.OID, u.FullName]));
    const items = (odm.ClinicalData.SubjectData as Node[]).flatMap((s) => (s.StudyEventData as Node[]).flatMap((e) =>
      (e.FormData as Node[]).flatMap((f) => (f.ItemGroupData as Node[]).flatMap((g) => (g.ItemData ?? []) as Node[]))));
    const hr = items.find((i) => i.ItemOID === 'IT.VS.HR' && String(i.Value) === '82') as Node;
    expect(hr.AuditRecord.SourceID).to.match(/^audit_events\/\d+$/);
    expect(users.get(hr.AuditRecord.UserRef.UserOID)).to.equal('Test system (API)');
    const auditId = Number(String(hr.AuditRecord.SourceID).split('/')[1]);
    const row = await app.db.knex('audit_events').where({ id: auditId }).first();
    expect([row.field_code, row.new_value]).to.deep.equal(['hr', '82']);
  });

  it('shows a blinded key no unblinded-team form and a one-site key no other site', async () => {
    const blinded = (await app.call('GET', `${base}/odm`, { key: world.blindedKey })).body as string;
    expect(xmllint(blinded).ok).to.equal(true);
    expect(blinded).to.not.include('IP_ALLOC').and.not.include('K-0042');
    const site02 = parse((await app.call('GET', `${base}/odm?content=data`, { key: world.site02Key })).body as string);
    expect((site02.ClinicalData.SubjectData as Node[]).map((s) => s.SiteRef.LocationOID)).to.deep.equal(['LOC.02']);
    expect((site02.AdminData.Location as Node[]).map((l) => l.OID)).to.deep.equal(['LOC.02']);
  });

  it('enters the export in the read log with its number of records', async () => {
    await app.call('GET', `${base}/odm?content=data`, { key: world.site02Key });
    const [log] = await app.db.knex('read_log').where({ operation: 'odm' }).orderBy('id', 'desc').limit(1);
    expect([log.filters, log.rows]).to.deep.equal([{ content: 'data' }, 2]);
  });
});
