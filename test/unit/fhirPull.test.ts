import { expect } from 'chai';
import { FhirPullError, pullPatientRecord } from '../../src/integrations/fhirPull.js';
import { startFhirServer } from '../helpers/fhirServer.js';

const BUSTER = 'test/fixtures/fhir/synthea/smart-buster-hoeger-235kb.json';
const BUSTER_ID = 'e4531916-b162-4f4b-90c2-ce37e132b8d4';

/** The code of the FhirPullError the pull stopped with, or `pulled` when it ended. */
async function pullOutcome(base: string): Promise<string> {
  try {
    await pullPatientRecord(base, BUSTER_ID, { bearerToken: 'hospital-secret' });
    return 'pulled';
  } catch (error) {
    if (error instanceof FhirPullError) return error.code;
    throw error;
  }
}

describe('pullPatientRecord', function () {
  this.timeout(10_000);

  // WHATWG URL reads `http:<host>/…` against an http base as a path under it, while fhir-kit-client
  // fetches any string starting with "http" as it stands: from <host>, with the bearer token.
  const tricks: [string, (next: string, other: string) => string][] = [
    ['http:<other host>/…', (next, other) => next.replace(/^http:\/\/[^/]+/, `http:${new URL(other).host}`)],
    ['HTTP:<other host>/…', (next, other) => next.replace(/^http:\/\/[^/]+/, `HTTP:${new URL(other).host}`)],
  ];
  for (const [written, rewrite] of tricks) {
    it(`refuses a next page written ${written} (fhir_paging_refused) and never asks that host`, async () => {
      const other = await startFhirServer([BUSTER]);
      const hospital = await startFhirServer([BUSTER], { pageSize: 20, nextLink: (next) => rewrite(next, other.base) });
      try {
        expect(await pullOutcome(hospital.base)).to.equal('fhir_paging_refused');
        expect(other.requests).to.deep.equal([]);
      } finally {
        await Promise.all([hospital.close(), other.close()]);
      }
    });
  }

  it('refuses a next page given as a relative address (fhir_paging_refused)', async () => {
    const hospital = await startFhirServer([BUSTER], { pageSize: 20, nextLink: (next) => new URL(next).pathname + new URL(next).search });
    try {
      expect(await pullOutcome(hospital.base)).to.equal('fhir_paging_refused');
    } finally {
      await hospital.close();
    }
  });

  it('follows next pages given as absolute addresses under the base', async () => {
    const hospital = await startFhirServer([BUSTER], { pageSize: 20 });
    try {
      const pulled = await pullPatientRecord(hospital.base, BUSTER_ID);
      expect(pulled.pages).to.be.above(1);
      expect(hospital.requests.filter((r) => r.includes('_page='))).to.have.length(pulled.pages - 1);
    } finally {
      await hospital.close();
    }
  });
});
