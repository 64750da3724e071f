import type { KeyContext } from '../apiKeys/keyContext.js';
import type { ExportRecord, ExportStore, FieldChange, ReadLogStore, Site, Study, StudyStore } from '../stores.js';
import type { ColumnDef, FormDef, StudyDesign } from '../studyDesign/types.js';
import { exportScopeOf, formIdsOf } from './exportScope.js';
import { odmStudy } from './odmMetadata.js';
import { formOid, itemGroupOid, itemOid, locationOid, studyEventOid } from './oids.js';
import { xmlAttributes, xmlElement, xmlEscape, xmlStartTag, xmlTextElement } from './xmlText.js';

type Stores = { studies: StudyStore; exports: ExportStore; readLog: ReadLogStore };

export type OdmContent = 'metadata' | 'data' | 'all';

export interface OdmFileContext { sourceVersion: string; now: Date }

const GRANULARITY: Record<OdmContent, string> = { metadata: 'Metadata', data: 'AllClinicalData', all: 'All' };

function userOid(actor: { actorType: string; actorId: number | null }): string {
  return `USR.${actor.actorType}.${actor.actorId ?? 0}`;
}

/** ODM's `boolean` is written `true`/`false`; everything else goes as saved. */
function odmValue(field: ColumnDef, saved: string): string {
  return field.type === 'yesno' ? String(saved.toLowerCase() === 'yes') : saved;
}

function auditRecord(change: FieldChange, site: string): string {
  return xmlElement('AuditRecord', {}, [
    xmlElement('UserRef', { UserOID: userOid(change) }),
    xmlElement('LocationRef', { LocationOID: locationOid(site) }),
    xmlTextElement('DateTimeStamp', change.at.toISOString()),
    xmlTextElement('ReasonForChange', change.reason),
    xmlTextElement('SourceID', `audit_events/${change.auditId}`),
  ]);
}

/** A field left empty on purpose: no value, `IsNull`, and its mark (ND, UNK, NA) as a comment. */
function markAnnotation(mark: string): string {
  return xmlElement('Annotation', { SeqNum: 1 }, [xmlTextElement('Comment', mark)]);
}

/** The start tag of an element as far as its last attribute, left open: the rest depends on the record. */
function openTag(name: string, attributes: Record<string, string>): string {
  return `<${name}${xmlAttributes(attributes)}`;
}

/** A field's `ItemData`, or nothing when it holds neither a value nor a mark. */
function itemData(itemStart: string, field: ColumnDef, value: string | undefined, mark: string | undefined, audit: string): string {
  if (value !== undefined && value !== '') {
    const start = `${itemStart} Value="${xmlEscape(odmValue(field, value))}"`;
    return audit === '' ? `${start}/>` : `${start}>${audit}</ItemData>`;
  }
  return mark ? `${itemStart} IsNull="Yes">${audit}${markAnnotation(mark)}</ItemData>` : '';
}

/**
 * Writes the item groups of one saved record of a form: the form's own fields, then each table row as a
 * repeat of its group. The form's OIDs and the start of each of its tags are made once per export, not
 * once per record: a study's export writes them for every record it holds.
 */
function formDataWriter(form: FormDef): (record: ExportRecord) => string {
  const own = form.fields.flatMap((field) => (field.type === 'table' ? [] : [{ field, itemStart: openTag('ItemData', { ItemOID: itemOid(form.code, field.code) }) }]));
  const tables = form.fields.flatMap((field) => (field.type !== 'table' ? [] : [{
    field,
    groupStart: openTag('ItemGroupData', { ItemGroupOID: itemGroupOid(form.code, field.code) }),
    columns: field.columns.map((column) => ({ column, itemStart: openTag('ItemData', { ItemOID: itemOid(form.code, field.code, column.code) }) })),
  }]));
  const formStart = `${openTag('FormData', { FormOID: formOid(form.code) })}>`;
  const ownGroupStart = openTag('ItemGroupData', { ItemGroupOID: itemGroupOid(form.code) });
  return (record) => {
    let items = '';
    for (const { field, itemStart } of own) {
      const audited = record.lastChanges?.[field.code];
      items += itemData(itemStart, field, record.values[field.code], record.notDone[field.code], audited ? auditRecord(audited, record.site) : '');
    }
    let text = `${formStart}${ownGroupStart}${items === '' ? '/>' : `>${items}</ItemGroupData>`}`;
    for (const { field, groupStart, columns } of tables) {
      const mark = record.notDone[field.code];
      if (mark) {
        text += `${groupStart} ItemGroupRepeatKey="1">${markAnnotation(mark)}</ItemGroupData>`;
        continue;
      }
      const rows = record.tables[field.code] ?? [];
      for (const [index, row] of rows.entries()) {
        let cells = '';
        for (const { column, itemStart } of columns) cells += itemData(itemStart, column, row[column.code], undefined, '');
        text += `${groupStart} ItemGroupRepeatKey="${index + 1}"${cells === '' ? '/>' : `>${cells}</ItemGroupData>`}`;
      }
    }
    return `${text}</FormData>`;
  };
}

/**
 * `ClinicalData` from the records, which come ordered by subject, visit and instance: a subject's and a
 * visit occurrence's elements are opened when their first record comes and closed when the next one
 * belongs elsewhere, so the document is written as the records are read.
 */
async function* clinicalData(design: StudyDesign, mdv: string, batches: AsyncIterable<ExportRecord[]>): AsyncGenerator<string> {
  const writers = new Map(design.forms.map((f) => [f.code, formDataWriter(f)]));
  yield xmlStartTag('ClinicalData', { StudyOID: design.code, MetaDataVersionOID: mdv });
  let subject: string | undefined;
  let event: string | undefined;
  for await (const batch of batches) {
    const text: string[] = [];
    for (const record of batch) {
      const writeFormData = writers.get(record.form);
      if (!writeFormData) continue;
      const eventKey = `${record.visit} ${record.instance}`;
      if (record.subject !== subject) {
        if (event !== undefined) text.push('</StudyEventData>');
        if (subject !== undefined) text.push('</SubjectData>');
        subject = record.subject;
        event = undefined;
        text.push(xmlStartTag('SubjectData', { SubjectKey: record.subject }), xmlElement('SiteRef', { LocationOID: locationOid(record.site) }));
      }
      if (eventKey !== event) {
        if (event !== undefined) text.push('</StudyEventData>');
        event = eventKey;
        text.push(xmlStartTag('StudyEventData', { StudyEventOID: studyEventOid(record.visit), StudyEventRepeatKey: record.instance }));
      }
      text.push(writeFormData(record));
    }
    yield text.join('');
  }
  if (event !== undefined) yield '</StudyEventData>';
  if (subject !== undefined) yield '</SubjectData>';
  yield '</ClinicalData>';
}

function adminData(sites: Site[], authors: { actorType: string; actorId: number | null; author: string }[], study: string, mdv: string, today: string): string {
  return xmlElement('AdminData', { StudyOID: study }, [
    ...authors.map((a) => xmlElement('User', { OID: userOid(a) }, [xmlTextElement('FullName', a.author)])),
    ...sites.map((s) => xmlElement('Location', { OID: locationOid(s.number), Name: s.name, LocationType: 'Site' }, [
      xmlElement('MetaDataVersionRef', { StudyOID: study, MetaDataVersionOID: mdv, EffectiveDate: today }),
    ])),
  ]);
}

/**
 * The study as a CDISC ODM 1.3.2 snapshot, in pieces as its records are read: the metadata (`content`
 * metadata or all), and `AdminData` with `ClinicalData` (data or all), optionally with each value's last
 * change as its `AuditRecord`. The key's rules apply as for the records read; everything comes from one
 * snapshot, and the read is logged with the number of records before the first piece.
 */
export async function exportOdm(
  stores: Stores, key: KeyContext, study: Study, options: { content: OdmContent; audit: boolean; file: OdmFileContext },
): Promise<AsyncIterable<string>> {
  const { design, ids, scope, sites } = await exportScopeOf(stores.studies, key, study);
  const formIds = formIdsOf(ids, design.forms.map((f) => f.code));
  const mdv = `MDV.${study.designHash.slice(0, 16)}`;
  const withData = options.content !== 'metadata';
  const snapshot = await stores.exports.openSnapshot();
  try {
    const records = withData ? await snapshot.count(scope, formIds) : 0;
    const authors = withData && options.audit ? await snapshot.authors(scope, formIds) : [];
    await stores.readLog.logRead({
      keyId: key.keyId, studyId: study.id, operation: 'odm', filters: { content: options.content, ...(options.audit ? { audit: true } : {}) }, rows: records,
    });
    const created = options.file.now.toISOString();
    const head = `<?xml version="1.0" encoding="UTF-8"?>\n${xmlStartTag('ODM', {
      xmlns: 'http://www.cdisc.org/ns/odm/v1.3', ODMVersion: '1.3.2', FileType: 'Snapshot', Granularity: GRANULARITY[options.content],
      FileOID: `sdx/${study.code}/odm/${created}`, CreationDateTime: created,
      Originator: 'Study Data Exchange (sdx)', SourceSystem: 'Study Data Exchange (sdx)', SourceSystemVersion: options.file.sourceVersion,
    })}`;
    return (async function* () {
      try {
        yield head;
        if (options.content !== 'data') yield odmStudy(design, mdv);
        if (withData) {
          yield adminData(sites, authors, study.code, mdv, created.slice(0, 10));
          yield* clinicalData(design, mdv, snapshot.recordBatches(scope, formIds, { withAudit: options.audit }));
        }
        yield '</ODM>\n';
      } finally {
        await snapshot.close();
      }
    })();
  } catch (error) {
    await snapshot.close();
    throw error;
  }
}
