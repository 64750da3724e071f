import { expect } from 'chai';
import { failureLogger } from '../../src/logs.js';
import { capturingStderr } from '../helpers/capturingStderr.js';

describe('the service logs (pino)', () => {
  it('write one JSON line with the level by name and the time as ISO 8601, and nothing of the process', async () => {
    const { stderr } = await capturingStderr(() => Promise.resolve(failureLogger.error({ request_id: 'r1' })));
    const line = JSON.parse(stderr) as Record<string, unknown>;
    expect(Object.keys(line)).to.deep.equal(['level', 'at', 'request_id']);
    expect(line.level).to.equal('error');
    expect(new Date(line.at as string).toISOString()).to.equal(line.at);
  });

  it('censor an Authorization header and cookies, should a line ever carry headers', async () => {
    const headers = { authorization: 'Bearer sdx_secret', cookie: 'sdx_session=abc', 'set-cookie': 'sdx_session=abc', accept: 'application/json' };
    const { stderr } = await capturingStderr(() => Promise.resolve(failureLogger.error({ headers, req: { headers }, res: { headers }, request: { headers }, response: { headers } })));
    expect(stderr).not.to.match(/sdx_secret|sdx_session/);
    type Headers = Record<string, string>;
    const line = JSON.parse(stderr) as { headers: Headers; req: { headers: Headers }; res: { headers: Headers }; request: { headers: Headers }; response: { headers: Headers } };
    for (const logged of [line.headers, line.req.headers, line.res.headers, line.request.headers, line.response.headers]) {
      expect(logged).to.deep.equal({ authorization: '[redacted]', cookie: '[redacted]', 'set-cookie': '[redacted]', accept: 'application/json' });
    }
  });
});
