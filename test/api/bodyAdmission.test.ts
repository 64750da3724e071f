import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { promisify } from 'node:util';
import { expect } from 'chai';
import type { Database } from '../../src/db/knex.js';
import type { Problem } from '../helpers/answerTypes.js';
import { createStudyWorld, type StudyWorld } from '../helpers/factories.js';
import { present } from '../helpers/only.js';
import { startServiceProcess, type ServiceProcess } from '../helpers/serviceProcess.js';
import { assertMatchesSpec } from '../helpers/specValidation.js';
import { resetDatabase, testDatabase } from '../helpers/testDatabase.js';

const MB = 1024 * 1024;

/** A raw HTTP exchange: what the service answered, and whether it closed the connection. */
interface Exchange {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * Opens a connection and sends a POST of `records` that declares `declared` bytes but sends only `sent`
 * bytes of it, then waits. Settles with the answer once the service closes the connection; a reset after
 * an answer was read still gives that answer.
 */
function upload(baseUrl: string, headers: Record<string, string>, declared: number, sent: number): { socket: net.Socket; answer: Promise<Exchange | undefined> } {
  const { hostname, port } = new URL(baseUrl);
  const socket = net.connect(Number(port), hostname);
  const head = [`POST /api/v1/studies/DEMO/records HTTP/1.1`, `Host: ${hostname}`, 'Content-Type: application/json', `Content-Length: ${declared}`,
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`), '', ''].join('\r\n');
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', () => undefined);
  socket.write(head);
  if (sent > 0) socket.write(Buffer.alloc(sent, 0x20));
  const answer = new Promise<Exchange | undefined>((resolve) => socket.once('close', () => {
    const text = Buffer.concat(chunks).toString('latin1');
    const [head = '', ...rest] = text.split('\r\n\r\n');
    const [statusLine, ...lines] = head.split('\r\n');
    if (!statusLine) return resolve(undefined);
    resolve({
      status: Number(statusLine.split(' ')[1]),
      headers: Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()])),
      body: rest.join('\r\n\r\n'),
    });
  }));
  return { socket, answer };
}

/** Resident memory of a process, in bytes (Linux). */
function residentBytes(pid: number): number {
  const kb = present(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1], `the resident memory of process ${pid}`);
  return Number(kb) * 1024;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function expectProblem(exchange: Exchange | undefined, status: number, code: string): Promise<void> {
  expect(exchange?.status).to.equal(status);
  const body = JSON.parse(exchange!.body) as Problem;
  expect(body.code).to.equal(code);
  await assertMatchesSpec('submitFormRecords', status, present(exchange!.headers['content-type'], 'the Content-Type'), body);
  expect(exchange!.headers.connection).to.equal('close');
}

describe('request bodies are admitted before they cost memory (issue 21.1)', function () {
  this.timeout(180_000);
  let db: Database;
  let world: StudyWorld;
  let service: ServiceProcess;

  before(async () => {
    db = await testDatabase();
    await resetDatabase(db.knex);
    world = await createStudyWorld(db.knex);
    service = await startServiceProcess({ BODY_DEADLINE_SECONDS: '2', BODY_BUFFER_MB: '1' });
  });
  after(() => service?.stop());

  it('keeps 150 keyless senders of 4 MB of a declared 5 MB within 100 MB of idle memory, during the attack and after', async () => {
    // Warm the path once, so the measure of idle is of a service that has served a body.
    await upload(service.baseUrl, {}, 10, 10).answer;
    const idle = residentBytes(service.pid);
    const senders = Array.from({ length: 150 }, () => upload(service.baseUrl, {}, 5 * MB, 4 * MB));
    const answers = await Promise.all(senders.map((s) => Promise.race([s.answer, pause(30_000).then(() => 'still open' as const)])));
    const during = residentBytes(service.pid);
    for (const s of senders) s.socket.destroy();
    await pause(500);
    const after = residentBytes(service.pid);
    // Each was refused and its connection closed by the service, without waiting for its body.
    expect(answers.filter((a) => a === 'still open')).to.have.length(0);
    const statuses = new Set(answers.map((a) => (a as Exchange | undefined)?.status));
    expect([...statuses].every((s) => s === 401 || s === undefined)).to.equal(true);
    expect(statuses.has(401)).to.equal(true);
    expect(during - idle, `resident memory grew from ${idle} to ${during} bytes`).to.be.below(100 * MB);
    expect(after - idle).to.be.below(100 * MB);
  });

  it('refuses a body that has not arrived within the deadline with 408, and closes the connection', async () => {
    const started = Date.now();
    const { answer } = upload(service.baseUrl, { Authorization: `Bearer ${world.key}` }, 1000, 10);
    await expectProblem(await answer, 408, 'body_timeout');
    expect(Date.now() - started).to.be.within(1500, 20_000);
  });

  it('refuses a body past the bytes held at once with 503 busy and Retry-After, and admits bodies again once they are gone', async () => {
    const key = { Authorization: `Bearer ${world.key}` };
    const holder = upload(service.baseUrl, key, 700 * 1024, 100);
    await pause(500);
    const refused = await upload(service.baseUrl, key, 700 * 1024, 0).answer;
    await expectProblem(refused, 503, 'busy');
    expect(refused!.headers['retry-after']).to.equal('5');
    // The first one stalls until its deadline, and then its bytes are free again.
    await expectProblem(await holder.answer, 408, 'body_timeout');
    const admitted = await fetch(`${service.baseUrl}/api/v1/studies/DEMO/records`, {
      method: 'POST', headers: { ...key, 'content-type': 'application/json' }, body: JSON.stringify({ records: [] }),
    });
    await assertMatchesSpec('submitFormRecords', admitted.status, admitted.headers.get('content-type') ?? '', await admitted.json());
    expect(admitted.status).to.not.be.oneOf([408, 503]);
  });
});

/**
 * Python's urllib sends the whole body before it reads the answer: were the connection closed while it
 * still sends, it would see a broken pipe, never the 413 (issue 21.2).
 */
const URLLIB_POST = `
import sys, urllib.request, urllib.error
url, key, size, chunked = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == 'chunked'
body = b'{"resourceType": "Bundle", "x": "' + b'a' * size + b'"}'
data = iter([body[i:i + 65536] for i in range(0, len(body), 65536)]) if chunked else body
request = urllib.request.Request(url, data=data, method='POST', headers={'Authorization': 'Bearer ' + key, 'Content-Type': 'application/fhir+json'})
try:
    with urllib.request.urlopen(request, timeout=30) as answer:
        print(answer.status)
except urllib.error.HTTPError as refusal:
    print(refusal.code, refusal.headers.get('Content-Type'), refusal.read().decode())
except Exception as failure:
    print(type(failure).__name__, failure)
`;

describe('a client that sends too much sees the 413 (issue 21.2)', function () {
  this.timeout(180_000);
  let world: StudyWorld;
  let service: ServiceProcess;

  before(async () => {
    const db = await testDatabase();
    await resetDatabase(db.knex);
    world = await createStudyWorld(db.knex);
    service = await startServiceProcess({});
  });
  after(() => service?.stop());

  async function urllibPost(size: number, mode: 'length' | 'chunked'): Promise<string> {
    const { stdout } = await promisify(execFile)('python3', ['-c', URLLIB_POST, `${service.baseUrl}/api/v1/studies/DEMO/fhir?subject=DEMO-01-001`, world.key, String(Math.round(size)), mode],
      { timeout: 60_000 });
    return stdout.trim();
  }

  for (const mode of ['length', 'chunked'] as const) {
    it(`answers each of 5 posts of 6.9 MB sent with ${mode === 'length' ? 'Content-Length' : 'chunked transfer coding'} by urllib with 413 payload_too_large`, async () => {
      for (let i = 0; i < 5; i++) {
        const answer = await urllibPost(6.9 * MB, mode);
        const [status, type, ...rest] = answer.split(' ');
        expect(status, answer.slice(0, 200)).to.equal('413');
        const body = JSON.parse(rest.join(' ')) as Problem;
        expect(body.code).to.equal('payload_too_large');
        await assertMatchesSpec('importFhirRecord', 413, present(type, 'the Content-Type'), body);
      }
    });
  }
});
