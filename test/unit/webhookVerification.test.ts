import { expect } from 'chai';
import { verifyWebhook, WebhookVerificationError } from '../../clients/typescript/src/index.js';

/**
 * The typed client's signature check (issue 22.6) against the example of the Standard Webhooks
 * specification (the secret, message id, timestamp, body and signature its documentation signs), and
 * against every way a delivery can be wrong.
 */
describe('verifyWebhook: the typed client checks a Standard Webhooks delivery', () => {
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  const body = '{"test": 2432232314}';
  const signature = 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=';
  const headers = { 'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek', 'webhook-timestamp': '1614265330', 'webhook-signature': signature };
  const now = new Date(1614265330 * 1000 + 60_000);

  const refusal = async (promise: Promise<unknown>): Promise<string> => {
    try {
      await promise;
    } catch (error) {
      expect(error).to.be.instanceOf(WebhookVerificationError);
      return (error as Error).message;
    }
    throw new Error('the delivery was accepted');
  };

  it('accepts the specification\'s example and returns its payload, from plain or fetch headers', async () => {
    expect(await verifyWebhook(secret, headers, body, { now })).to.deep.equal({ test: 2432232314 });
    expect(await verifyWebhook(secret, new Headers(headers), body, { now })).to.deep.equal({ test: 2432232314 });
  });

  it('accepts a delivery whose header lists several signatures, one of them right (a secret being rotated)', async () => {
    const rotated = { ...headers, 'webhook-signature': `v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA= ${signature}` };
    expect(await verifyWebhook(secret, rotated, body, { now })).to.deep.equal({ test: 2432232314 });
  });

  it('refuses a changed body, id or timestamp, another secret, and an unknown signature version', async () => {
    expect(await refusal(verifyWebhook(secret, headers, '{"test": 2432232315}', { now }))).to.equal('no valid signature');
    expect(await refusal(verifyWebhook(secret, { ...headers, 'webhook-id': 'msg_other' }, body, { now }))).to.equal('no valid signature');
    expect(await refusal(verifyWebhook(secret, { ...headers, 'webhook-timestamp': '1614265331' }, body, { now }))).to.equal('no valid signature');
    expect(await refusal(verifyWebhook('whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', headers, body, { now }))).to.equal('no valid signature');
    expect(await refusal(verifyWebhook(secret, { ...headers, 'webhook-signature': signature.replace('v1,', 'v2,') }, body, { now }))).to.equal('no valid signature');
  });

  it('refuses a delivery older or newer than the tolerance (a replay), and one without its headers', async () => {
    expect(await refusal(verifyWebhook(secret, headers, body, { now: new Date(1614265330 * 1000 + 301_000) }))).to.match(/too far/);
    expect(await refusal(verifyWebhook(secret, headers, body, { now: new Date(1614265330 * 1000 - 301_000) }))).to.match(/too far/);
    expect(await verifyWebhook(secret, headers, body, { now: new Date(1614265330 * 1000 + 3_600_000), toleranceSeconds: 3_600 })).to.deep.equal({ test: 2432232314 });
    const unsigned = Object.fromEntries(Object.entries(headers).filter(([name]) => name !== 'webhook-signature'));
    expect(await refusal(verifyWebhook(secret, unsigned, body, { now }))).to.equal('missing webhook-signature header');
    expect(await refusal(verifyWebhook(secret, { ...headers, 'webhook-timestamp': 'soon' }, body, { now }))).to.match(/not a number/);
  });
});
