import type { KeyContext } from '../apiKeys/keyContext.js';
import type { DesignIds, Site, Study } from '../stores.js';
import type { FormDef, StudyDesign } from '../studyDesign/types.js';

/**
 * Whether a form is hidden from an actor: in a blinded study, forms of the unblinded team are seen
 * and written only by actors whose person is unblinded (interface description, Authentication 6).
 */
export function formHidden(study: Pick<Study, 'blinded'>, form: Pick<FormDef, 'team'>, unblinded: boolean): boolean {
  return study.blinded && form.team === 'unblinded' && !unblinded;
}

/** The codes of the study's forms hidden from an actor who is (or is not) unblinded (see `formHidden`). */
export function hiddenFormCodes(study: Pick<Study, 'blinded' | 'design'>, unblinded: boolean): Set<string> {
  return new Set(study.design.forms.filter((f) => formHidden(study, f, unblinded)).map((f) => f.code));
}

/** The ids of those forms (`hiddenFormCodes`), as the queries that leave them out take them. */
export function hiddenFormIds(study: Pick<Study, 'blinded' | 'design'>, ids: Pick<DesignIds, 'forms'>, unblinded: boolean): number[] {
  return [...hiddenFormCodes(study, unblinded)].map((code) => ids.forms.get(code)!);
}

/**
 * The part of a study's design a key may see: its own sites, and no unblinded-team form (nor the
 * visits' references to it, nor its edit checks) unless the key's maker is unblinded.
 */
export function designForKey(study: Study, sites: Site[], key: KeyContext): StudyDesign {
  const design = study.design;
  const forms = design.forms.filter((f) => !formHidden(study, f, key.makerUnblinded));
  const visible = new Set(forms.map((f) => f.code));
  const siteNumbers = new Set(sites.filter((s) => key.siteIds.includes(s.id)).map((s) => s.number));
  return {
    ...design,
    enrolment_open: study.enrolmentOpen,
    sites: design.sites.filter((s) => siteNumbers.has(s.number)),
    visits: design.visits.map((v) => ({ ...v, forms: v.forms.filter((code) => visible.has(code)) })),
    forms,
    edit_checks: design.edit_checks.filter((c) => visible.has(c.form)),
  };
}
