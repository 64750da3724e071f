import { readPage } from '../domain/reads/readPage.js';
import { toPatientPageDto } from './presenters/readRows.js';
import { readRequestOf, poolStores } from './readRequest.js';
import { enrolPatient } from '../domain/patients/enrolPatient.js';
import { inTransaction } from '../db/stores.js';
import { authenticated, keyActor } from './authenticated.js';
import { answerOnce, asKept } from './idempotency.js';
import type { OperationHandler } from './types.js';

/** POST /studies/{study_code}/patients: enrols a patient at one of the key's sites. */
export const createPatient: OperationHandler<'createPatient'> = async (c, ctx) => {
  const { key, study, services } = authenticated(ctx);
  return inTransaction(services.db.knex, (stores) => answerOnce(ctx, stores, { operation: 'createPatient', input: c.request.requestBody }, async () =>
    ({ status: 201 as const, body: await enrolPatient(stores, keyActor(key), key, study, c.request.requestBody) }), asKept));
};

/** GET /studies/{study_code}/patients: a page of the patients the key may see. */
export const listPatients: OperationHandler<'listPatients'> = async (c, ctx) => {
  const { key, study, services } = authenticated(ctx);
  const stores = poolStores(services);
  const page = await readPage(stores, key, study, 'patients', readRequestOf(c.request.query), services.readAhead.pages('patients', (...args) => stores.reads.patientsPage(...args)));
  return { status: 200, body: toPatientPageDto(page) };
};
