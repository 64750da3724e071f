// Why: an import's items are written once with their import and only ever read and decided with it. As rows they
// cost the FHIR call one foreign-key check and index entry each; as one `json` value in the import's row they
// cost a fraction of that (bench/README.md, "FHIR import items in the import's row"). `json` rather than
// `jsonb`: the items are stored as the service wrote them, without the database parsing them into a tree.
import type { Knex } from 'knex';
import { createImportItemsTable } from './20261122090700_create_fhir_imports.js';

const ITEM_MEMBERS = `json_build_object('resource', i.resource, 'code', i.code, 'form', i.form_code, 'field', i.field_code, 'row', i.row,
  'visit', i.visit_code, 'instance', i.instance, 'value', i.value, 'unit', i.unit, 'original', i.original, 'effective', i.effective,
  'saved_value', i.saved_value, 'state', i.state, 'reason', i.reason, 'chosen_by', i.chosen_by, 'candidates', i.candidates)`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table fhir_imports add column items json');
  await knex.raw(`update fhir_imports f set items = coalesce(
    (select json_agg(${ITEM_MEMBERS} order by i.position) from fhir_import_items i where i.import_id = f.id), '[]')`);
  await knex.raw('alter table fhir_imports alter column items set not null');
  await knex.schema.dropTable('fhir_import_items');
}

export async function down(knex: Knex): Promise<void> {
  await createImportItemsTable(knex);
  await knex.raw(`insert into fhir_import_items (import_id, position, resource, code, form_code, field_code, row, visit_code, instance, value,
      unit, original, effective, saved_value, state, reason, chosen_by, candidates)
    select f.id, e.ord - 1, e.item->>'resource', (e.item->'code')::jsonb, e.item->>'form', e.item->>'field', (e.item->>'row')::int,
      e.item->>'visit', (e.item->>'instance')::int, e.item->>'value', e.item->>'unit', (e.item->'original')::jsonb, e.item->>'effective',
      e.item->>'saved_value', e.item->>'state', e.item->>'reason', e.item->>'chosen_by', coalesce((e.item->'candidates')::jsonb, '[]')
    from fhir_imports f, json_array_elements(f.items) with ordinality as e(item, ord)`);
  await knex.raw('alter table fhir_imports drop column items');
}
