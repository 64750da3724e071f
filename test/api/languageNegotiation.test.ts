import { expect } from 'chai';
import type { Problem } from '../helpers/answerTypes.js';
import { startTestApp, type TestApp } from '../helpers/testApp.js';

/**
 * Which language a refusal is worded in, through Koa's own Accept-Language negotiation (issue 20.6):
 * `lang` first, then the client's preferences with their qualities, English when neither language is asked.
 */
describe('the language of an answer', () => {
  let app: TestApp;
  before(async () => { app = await startTestApp(); });
  after(() => app.close());

  const titleFor = async (query: string, acceptLanguage?: string): Promise<string> => {
    const headers: Record<string, string> = acceptLanguage === undefined ? {} : { 'accept-language': acceptLanguage };
    const res = await app.call<Problem>('GET', `/api/v1/studies/ANY${query}`, { headers });
    expect(res.status).to.equal(401);
    return res.body.title;
  };

  const english = 'API key missing';
  const russian = 'Нет API-ключа';

  it('follows the qualities of Accept-Language, a regional tag included', async () => {
    expect(await titleFor('', 'en;q=0.4, ru;q=0.8')).to.equal(russian);
    expect(await titleFor('', 'ru-RU')).to.equal(russian);
    expect(await titleFor('', 'ru;q=0.3, en-GB;q=0.9')).to.equal(english);
  });

  it('answers in English when neither language is asked for, or anything is', async () => {
    expect(await titleFor('')).to.equal(english);
    expect(await titleFor('', 'de, fr;q=0.8')).to.equal(english);
    expect(await titleFor('', '*')).to.equal(english);
    expect(await titleFor('', 'ru;q=0')).to.equal(english);
  });

  it('lets lang in the query win over the header', async () => {
    expect(await titleFor('?lang=en', 'ru')).to.equal(english);
    expect(await titleFor('?lang=ru', 'en')).to.equal(russian);
  });
});
