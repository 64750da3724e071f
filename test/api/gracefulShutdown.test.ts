import net from 'node:net';
import { expect } from 'chai';
import type { AnswerOf } from '../helpers/answerTypes.js';
import { giveConsent } from '../helpers/factories.js';
import { at } from '../helpers/only.js';
import { unscheduledVisitsBody } from '../helpers/recordBodies.js';
import { blockedIn, until } from '../helpers/serviceActivity.js';
import { startServiceProcess, type ServiceProcess } from '../helpers/serviceProcess.js';
import { useStudyWorld } from '../helpers/studyWorld.js';
import { testOwnerDatabase } from '../helpers/testDatabase.js';

/**
 * SIGTERM to a service process while a 500-record call is in flight: the test holds the audit trail's
 * table, so the call is certainly still running when the signal arrives and for as long as the test
 * looks at the process; then it lets the call finish.
 */

const SUBJECTS = ['01-201', '02-201'];

/** Whether a new TCP connection to the address is refused. */
function refused(baseUrl: string): Promise<boolean> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve) => {
    const socket = net.connect({ host: hostname, port: Number(port) });
    socket.once('connect', () => { socket.destroy(); resolve(false); });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
  });
}

describe('graceful shutdown of a service process', function () {
  this.timeout(120_000);
  const { app, world } = useStudyWorld();
  let service: ServiceProcess;

  before(async () => {
    service = await startServiceProcess({});
    for (const subject of SUBJECTS) {
      const enrolled = await app.call('POST', `/api/v1/studies/${world.code}/patients`, {
        key: world.key, body: { subject, site: subject.slice(0, 2), sex: 'male', birth_year: 1970, enrolled_on: '2026-01-05' },
      });
      expect(enrolled.status).to.equal(201);
      await giveConsent(app.db.knex, world.code, subject);
    }
  });
  after(async () => {
    await service?.stop();
  });

  it('on SIGTERM refuses new connections, finishes the request in flight with its normal answer, then exits 0', async () => {
    // As the owner: the service's runtime role may not lock the audit trail against writes.
    const hold = await (await testOwnerDatabase()).knex.transaction();
    let answered = false;
    let inFlight!: Promise<{ status: number; body: AnswerOf<'submitFormRecords', 200> }>;
    try {
      await hold.raw('lock table audit_events in share mode');
      inFlight = fetch(`${service.baseUrl}/api/v1/studies/${world.code}/records`, {
        method: 'POST',
        headers: { authorization: `Bearer ${world.key}`, 'content-type': 'application/json' },
        body: JSON.stringify(unscheduledVisitsBody(SUBJECTS)),
        signal: AbortSignal.timeout(60_000),
      }).then(async (response) => ({ status: response.status, body: await response.json() as AnswerOf<'submitFormRecords', 200> })).finally(() => { answered = true; });
      await until(() => blockedIn(app.db.knex, service.pid, /^insert into "audit_events"/), 'the records call to write its audit trail');

      service.kill('SIGTERM');
      await until(() => refused(service.baseUrl), 'the service to stop accepting connections');
      expect(answered, 'answered while the test still held its lock').to.equal(false);
    } finally {
      await hold.rollback();
    }

    const { status, body } = await inFlight;
    expect(status).to.equal(200);
    expect(body.counts.ok + body.counts.warn).to.equal(500);
    expect(body.results.every((r) => r.record_id !== null)).to.equal(true);
    const saved = await app.db.knex('records as r').join('studies as s', 's.id', 'r.study_id').where('s.code', world.code).count<{ n: string }[]>({ n: '*' });
    expect(Number(at(saved, 0).n)).to.equal(500);
    expect(await service.exited).to.deep.equal({ code: 0, signal: null });
  });
});
