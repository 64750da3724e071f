// Why: keys that today's derivation already shows as stopped (maker not the study's manager now, or a read key whose maker may not
// export now) are kept as stopped before the upgrade lets anyone give the role back, so the upgrade revives nothing (keyStateOf).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    update api_keys k set stopped_at = now(),
      stopped_reason = case when m.id is null then 'maker_not_manager' else 'maker_lost_export' end
    from api_keys k2 left join study_roles m on m.study_id = k2.study_id and m.user_id = k2.created_by and m.role = 'manager'
    where k2.id = k.id and k.stopped_at is null and k.revoked_at is null and k.expires_at > now()
      and (m.id is null or (k.can_read and not m.can_export))`);
}

export async function down(): Promise<void> {
  // Nothing to undo: the previous migration's down drops the columns.
}
