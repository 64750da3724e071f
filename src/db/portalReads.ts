import type { Knex } from 'knex';
import type { PatientCardStore } from '../domain/patients/patientCard.js';
import type { SitePatientsStore } from '../domain/patients/sitePatients.js';
import type { StaffStudiesStore, StaffStudy } from '../domain/people/staffStudies.js';
import type { SitePatient } from '../domain/patients/sitePatients.js';
import { visibleCountsSql } from './fhirImportReads.js';

interface SitePatientRow { subject: string; site: string; status: SitePatient['status']; enrolled_on: string; open_queries: number; proposed_imports: number }
interface OpenQueryRow {
  id: number; visit: string; instance: number; form: string; field_code: string; status: string; origin: string; message: string; opened_by: string; opened_at: Date;
  answers: { author: string; text: string; answeredAt: string }[];
}
interface AuditTrailRow {
  id: number; at: Date; author: string; reason: string; action: string; visit: string | null; instance: number | null; form: string | null;
  field_code: string | null; old_value: string | null; new_value: string | null; details: Record<string, unknown>;
}
interface FhirImportSummaryRow {
  number: number; created_at: Date; mode: string; status: string; counts: Record<string, number>; key_name: string | null; decided_at: Date | null; decided_by: string | null;
}

/**
 * What the staff portal shows and no use case writes: a person's studies, the patient list of their
 * sites, and the parts of a patient's card beside the records. Read-only; every query is bounded by
 * a patient or by the sites the caller passes in, and leaves out forms the caller says are hidden.
 */
export function portalReadStore(db: Knex): PatientCardStore & SitePatientsStore & StaffStudiesStore {
  return {
    async studiesOf(userId) {
      const rows = await db('study_roles as r')
        .join('studies as s', 's.id', 'r.study_id')
        .where('r.user_id', userId)
        .groupBy('s.id', 's.code', 's.name')
        .orderBy('s.code')
        .select<StaffStudy[]>('s.code', 's.name', db.raw('array_agg(r.role order by r.role) as roles'));
      return rows.map((r) => ({ code: r.code, name: r.name, roles: r.roles }));
    },
    async patientsAt(studyId, sites, page) {
      // One row per listed site with its hidden forms: joining it keeps the patients of those sites and
      // gives each patient the hidden forms of its own site.
      const listed = JSON.stringify(sites.map((s) => ({ site_id: s.siteId, hidden_form_ids: s.hiddenFormIds })));
      const q = db('patients as p')
        .join('sites as s', 's.id', 'p.site_id')
        .joinRaw('join jsonb_to_recordset(?::jsonb) as listed(site_id int, hidden_form_ids int[]) on listed.site_id = p.site_id', [listed])
        .where('p.study_id', studyId)
        .orderBy('p.subject')
        .limit(page.limit);
      if (page.contains) q.whereILike('p.subject', `%${page.contains.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
      if (page.after !== undefined) q.where('p.subject', '>', page.after);
      const rows = await q
        .select<SitePatientRow[]>(
          'p.subject', 's.number as site', 'p.status', 'p.enrolled_on',
          db.raw(`(select count(*)::int from queries q join records r on r.id = q.record_id
            where q.patient_id = p.id and q.status in ('open', 'answered') and not (r.form_id = any(listed.hidden_form_ids))) as open_queries`),
          db.raw(`(select count(*)::int from fhir_imports f where f.patient_id = p.id and f.status = 'proposed') as proposed_imports`),
        );
      return rows.map((r) => ({
        subject: r.subject, site: r.site, status: r.status, enrolledOn: r.enrolled_on, openQueries: r.open_queries, proposedImports: r.proposed_imports,
      }));
    },
    async openQueries(patientId, hiddenFormIds) {
      const rows = await db('queries as q')
        .join('records as r', 'r.id', 'q.record_id')
        .join('visits as v', 'v.id', 'r.visit_id')
        .join('forms as f', 'f.id', 'r.form_id')
        .where('q.patient_id', patientId)
        .whereIn('q.status', ['open', 'answered'])
        .whereNotIn('r.form_id', hiddenFormIds)
        .orderBy('q.id')
        .select<OpenQueryRow[]>('q.id', 'v.code as visit', 'r.instance', 'f.code as form', 'q.field_code', 'q.status', 'q.origin', 'q.message', 'q.opened_by', 'q.opened_at',
          db.raw(`coalesce((select json_agg(json_build_object('author', a.author, 'text', a.text, 'answeredAt', a.answered_at) order by a.id)
            from query_answers a where a.query_id = q.id), '[]'::json) as answers`));
      return rows.map((r) => ({
        id: r.id, visit: r.visit, instance: r.instance, form: r.form, field: r.field_code, status: r.status, origin: r.origin, message: r.message,
        openedBy: r.opened_by, openedAt: r.opened_at,
        answers: r.answers.map((a) => ({ ...a, answeredAt: new Date(a.answeredAt) })),
      }));
    },
    async auditTrail(patientId, hiddenFormIds, limit) {
      const rows = await db('audit_events as a')
        .leftJoin('records as r', 'r.id', 'a.record_id')
        .leftJoin('visits as v', 'v.id', 'r.visit_id')
        .leftJoin('forms as f', 'f.id', 'r.form_id')
        .where('a.patient_id', patientId)
        .andWhere((q) => { q.whereNull('r.id').orWhereNotIn('r.form_id', hiddenFormIds); })
        .orderBy('a.id', 'desc')
        .limit(limit)
        .select<AuditTrailRow[]>('a.id', 'a.at', 'a.author', 'a.reason', 'a.action', 'v.code as visit', 'r.instance', 'f.code as form', 'a.field_code', 'a.old_value', 'a.new_value', 'a.details');
      return rows.map((r) => ({
        id: r.id, at: r.at, author: r.author, reason: r.reason, action: r.action, visit: r.visit ?? null, instance: r.instance ?? null,
        form: r.form ?? null, field: r.field_code, oldValue: r.old_value, newValue: r.new_value, details: r.details,
      }));
    },
    async fhirImports(patientId, hiddenFormIds) {
      // The stored counts count every item: recounted without the hidden forms' for a person who may not see them.
      const counts = hiddenFormIds.length > 0 ? db.raw(`${visibleCountsSql('i')} as counts`, [hiddenFormIds]) : 'i.counts';
      const rows = await db('fhir_imports as i')
        .leftJoin('api_keys as k', 'k.id', 'i.api_key_id')
        .leftJoin('users as u', 'u.id', 'i.decided_by')
        .where('i.patient_id', patientId)
        .orderBy('i.number', 'desc')
        .select<FhirImportSummaryRow[]>('i.number', 'i.created_at', 'i.mode', 'i.status', counts, 'k.name as key_name', 'i.decided_at', 'u.name as decided_by');
      return rows.map((r) => ({
        number: r.number, createdAt: r.created_at, mode: r.mode, status: r.status, counts: r.counts, keyName: r.key_name,
        decidedAt: r.decided_at, decidedBy: r.decided_by,
      }));
    },
  };
}
