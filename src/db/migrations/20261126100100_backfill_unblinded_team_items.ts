// Why: the imports made before `unblinded_team_items` was stored get the flag their items give: an item on a form of
// the unblinded team in a blinded study (formHidden), as `importFhirRecord` sets it for a new import. A study's
// blinding and its forms' teams never change once it is loaded, and an import's items keep their forms.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    update fhir_imports fi set unblinded_team_items = true
    from studies s
    where s.id = fi.study_id and s.blinded and exists (
      select 1 from json_array_elements(fi.items) as e(item) join forms f on f.study_id = fi.study_id and f.code = e.item->>'form'
      where f.team = 'unblinded')`);
}

export async function down(): Promise<void> {
  // Nothing to undo: the previous migration's down drops the column.
}
