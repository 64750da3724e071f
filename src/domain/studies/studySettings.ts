import type { Actor } from '../actor.js';
import { auditEntry } from '../auditTrail.js';
import { requireStudy } from './requireStudy.js';
import type { AuditStore, Study, StudySettings, StudyStore } from '../stores.js';

/** Switches the API, enrolment or the study lock, and records each change in the audit trail. */
export async function changeStudySettings(
  stores: { studies: StudyStore; audit: AuditStore },
  actor: Actor,
  studyCode: string,
  settings: StudySettings,
): Promise<Study> {
  const study = await requireStudy(stores.studies, studyCode);
  const current: Required<StudySettings> = { apiEnabled: study.apiEnabled, enrolmentOpen: study.enrolmentOpen, locked: study.locked };
  const changed = (Object.keys(current) as (keyof StudySettings)[]).filter(
    (name) => settings[name] !== undefined && settings[name] !== current[name],
  );
  if (changed.length === 0) return study;
  const next = { ...current, ...Object.fromEntries(changed.map((name) => [name, settings[name]])) };
  await stores.studies.updateSettings(study.id, next);
  await stores.audit.append(
    changed.map((name) =>
      auditEntry(actor, study.id, {
        action: 'study.settings_changed',
        fieldCode: name,
        oldValue: String(current[name]),
        newValue: String(settings[name]),
      }),
    ),
  );
  return { ...study, ...next };
}
