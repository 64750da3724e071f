import type { components } from '../../../generated/openapi.js';
import type { AuditReadRow } from '../../domain/reads/auditRows.js';
import type { Page } from '../../domain/reads/readPage.js';
import { pageTail } from './readRows.js';

type Wire = components['schemas'];

/** An audit page on the wire: each row keeps, unchanged, every member its chain hash covers. */
export function toAuditPageDto(page: Page<AuditReadRow>): Wire['AuditPage'] {
  return {
    audit: page.rows.map((a) => ({
      id: a.id, position: a.position, at: a.at, author: a.author, reason: a.reason, action: a.action, subject: a.subject, site: a.site,
      visit: a.visit, form: a.form, instance: a.instance, field: a.fieldCode, old_value: a.oldValue, new_value: a.newValue, details: a.details,
      actor_type: a.actorType, actor_id: a.actorId, study_id: a.studyId, patient_id: a.patientId, record_id: a.recordId,
      previous_hash: a.prevHash, hash: a.hash,
    })),
    ...pageTail(page),
  };
}
