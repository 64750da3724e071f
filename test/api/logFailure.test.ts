import { expect } from 'chai';
import { capturingStderr } from '../helpers/capturingStderr.js';
import { PortalClient } from '../helpers/portalClient.js';
import { addStaff, STAFF_PASSWORD } from '../helpers/portalPeople.js';
import { only } from '../helpers/only.js';
import { useStudyWorld } from '../helpers/studyWorld.js';
import { testOwnerDatabase } from '../helpers/testDatabase.js';

/**
 * Issue 20.4: a failure of the service (not a refusal) is logged once, by the one logFailure, with the
 * request id the answer gives and the stack, and the answer itself carries no stack, from the API and
 * from the portal alike. The failure is real: the studies table is renamed away under the service.
 */
describe('logFailure: the API and the portal log an unknown failure once, and answer without a stack', () => {
  const { app, world } = useStudyWorld();
  let manager: PortalClient;

  before(async () => {
    await addStaff(app.db.knex, 'failure@sdx.test', { study: world.code, role: 'manager' });
    manager = new PortalClient(app.baseUrl);
    expect((await manager.signIn('failure@sdx.test', STAFF_PASSWORD)).status).to.equal(303);
  });

  async function withStudiesAway<T>(task: () => Promise<T>): Promise<T> {
    await (await testOwnerDatabase()).knex.raw('ALTER TABLE studies RENAME TO studies_away');
    try {
      return await task();
    } finally {
      await (await testOwnerDatabase()).knex.raw('ALTER TABLE studies_away RENAME TO studies');
    }
  }

  /** The one stderr line of the request, parsed; it must hold the stack the answer does not. */
  function failureLine(stderr: string, requestId: string): Record<string, string> {
    const mine = stderr.split('\n').filter((line) => line.includes(requestId));
    expect(mine, stderr).to.have.length(1);
    const logged = JSON.parse(only(mine)) as Record<string, string>;
    expect(Object.keys(logged)).to.deep.equal(['level', 'at', 'request_id', 'method', 'path', 'error']);
    expect(logged).to.deep.include({ level: 'error', request_id: requestId });
    expect(logged.error).to.match(/studies.*does not exist/).and.to.include('\n    at ');
    return logged;
  }

  it('API: 500 internal with only the request id, and one line with the stack', async () => {
    // Fetched directly: the spec declares no 500 for a read call, so the suite's spec check would refuse it.
    const { result: res, stderr } = await capturingStderr(() => withStudiesAway(() =>
      fetch(`${app.baseUrl}/api/v1/studies/${world.code}/patients`, { headers: { authorization: `Bearer ${world.key}` } })));
    expect(res.status).to.equal(500);
    const requestId = res.headers.get('x-request-id')!;
    const text = await res.text();
    expect(JSON.parse(text)).to.deep.include({ code: 'internal', request_id: requestId });
    expect(text).to.not.match(/ at |does not exist|studies_away/);
    expect(failureLine(stderr, requestId)).to.deep.include({ method: 'GET', path: `/api/v1/studies/${world.code}/patients` });
  });

  it('portal: the error page shows the request id and no stack, and one line with the stack', async () => {
    const { result: page, stderr } = await capturingStderr(() => withStudiesAway(() => manager.get('/portal')));
    expect(page.status).to.equal(500);
    const requestId = page.headers.get('x-request-id')!;
    expect(page.html).to.include(requestId).and.not.match(/ at |does not exist|studies_away/);
    expect(failureLine(stderr, requestId)).to.deep.include({ method: 'GET', path: '/portal' });
  });
});
