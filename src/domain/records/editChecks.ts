import jsonLogic, { type RulesLogic } from 'json-logic-js';
import type { EditCheckDef } from '../studyDesign/types.js';

/**
 * The edit checks of a form that fail over a record's typed values. A check's JSON Logic rule must
 * be truthy; the design decides how it treats empty fields (e.g. `missing`), exactly as for typed data.
 */
export function failingChecks(checks: EditCheckDef[], typed: Record<string, unknown>): EditCheckDef[] {
  return checks.filter((check) => !jsonLogic.truthy(jsonLogic.apply(check.rule as RulesLogic, typed)));
}
