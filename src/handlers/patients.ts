import { readPage } from '../domain/reads/readPage.js';
import { toPatientPageDto } from './presenters/readRows.js';
import { READ_TRANSACTION, readRequestOf } from './readRequest.js';
import { enrolPatient } from '../domain/patients/enrolPatient.js';
import { inTransaction } from '../db/stores.js';
import { authenticated, keyActor } from './authenticated.js';
import type { OperationHandler } from './types.js';

/** POST /studies/{study_code}/patients: enrols a patient at one of the key's sites. */
export const createPatient: OperationHandler<'createPatient'> = async (c, ctx) => {
  const { key, study, services } = authenticated(ctx);
  const body = await inTransaction(services.db.knex, (stores) => enrolPatient(stores, keyActor(key), key, study, c.request.requestBody));
  return { status: 201, body };
};

/** GET /studies/{study_code}/patients: a page of the patients the key may see. */
export const listPatients: OperationHandler<'listPatients'> = async (c, ctx) => {
  const { key, study, services } = authenticated(ctx);
  const page = await inTransaction(services.db.knex, (stores) =>
    readPage(stores, key, study, 'patients', readRequestOf(c.request.query), (...args) => stores.reads.patientsPage(...args)), READ_TRANSACTION);
  return { status: 200, body: toPatientPageDto(page) };
};
