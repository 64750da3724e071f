import { expect } from 'chai';
import { PortalClient } from '../helpers/portalClient.js';
import { addStaff, STAFF_PASSWORD } from '../helpers/portalPeople.js';
import { useStudyWorld } from '../helpers/studyWorld.js';

/** The subjects listed on a study page, in order. */
const subjectsOn = (html: string): string[] => [...html.matchAll(/<a href="\/p\/[^/]+\/s\/[^"]+">([^<]+)<\/a>/g)].map(([, subject = '']) => subject);
/** The address of a pager link, as a browser would follow it. */
const link = (html: string, id: string): string | undefined => new RegExp(`<a href="([^"]+)" id="${id}">`).exec(html)?.[1]?.replaceAll('&amp;', '&');

describe('staff portal: the study\'s patient list, searched and paged', () => {
  const { app, world } = useStudyWorld();
  let manager: PortalClient;
  let site01: PortalClient;

  const enrol = async (site: string) => {
    const res = await app.call('POST', `/api/v1/studies/${world.code}/patients`, { key: world.key, body: { site, sex: 'female', birth_year: 1960, enrolled_on: '2026-01-10' } });
    expect(res.status).to.equal(201);
  };

  before(async function () {
    this.timeout(120_000);
    await addStaff(app.db.knex, 'lead@sdx.test', { study: world.code, role: 'manager' });
    await addStaff(app.db.knex, 'nurse01@sdx.test', { study: world.code, role: 'site_staff', sites: ['01'] });
    for (let i = 0; i < 55; i++) await enrol('01');
    for (let i = 0; i < 3; i++) await enrol('02');
    manager = new PortalClient(app.baseUrl);
    expect((await manager.signIn('lead@sdx.test', STAFF_PASSWORD)).status).to.equal(303);
    site01 = new PortalClient(app.baseUrl);
    expect((await site01.signIn('nurse01@sdx.test', STAFF_PASSWORD)).status).to.equal(303);
  });

  it('shows 50 patients a page in subject order, the next page after the last subject shown, without skipping one enrolled meanwhile', async () => {
    const first = await manager.get(`/p/${world.code}`);
    expect(first.status).to.equal(200);
    expect(subjectsOn(first.html)).to.deep.equal(Array.from({ length: 50 }, (_, i) => `01-${String(i + 1).padStart(3, '0')}`));
    expect(link(first.html, 'first-page')).to.equal(undefined);
    const next = link(first.html, 'next-page');
    expect(next).to.equal(`/p/${world.code}?after=01-050`);
    expect(first.html).to.include('Next 50 →');

    await enrol('01'); // 01-056, enrolled while the list is being read
    const second = await manager.get(next!);
    expect(subjectsOn(second.html)).to.deep.equal(['01-051', '01-052', '01-053', '01-054', '01-055', '01-056', '02-001', '02-002', '02-003']);
    expect(link(second.html, 'next-page')).to.equal(undefined);
    expect(link(second.html, 'first-page')).to.equal(`/p/${world.code}`);
  });

  it('finds patients by any part of the number, in any case, and pages the matches keeping the search', async () => {
    const found = await manager.get(`/p/${world.code}?q=${encodeURIComponent(' 01-05 ')}`);
    expect(subjectsOn(found.html)).to.deep.equal(['01-050', '01-051', '01-052', '01-053', '01-054', '01-055', '01-056']);
    expect(found.html).to.include('<input type="search" name="q" value="01-05" maxlength="100">');
    expect(subjectsOn((await manager.get(`/p/${world.code}?q=-00`)).html)).to.have.length(12);
    const paged = await manager.get(`/p/${world.code}?q=01-`);
    expect(subjectsOn(paged.html)).to.have.length(50);
    expect(link(paged.html, 'next-page')).to.equal(`/p/${world.code}?q=01-&after=01-050`);
    const rest = await manager.get(link(paged.html, 'next-page')!);
    expect(subjectsOn(rest.html)).to.deep.equal(['01-051', '01-052', '01-053', '01-054', '01-055', '01-056']);
    expect(link(rest.html, 'first-page')).to.equal(`/p/${world.code}?q=01-`);
  });

  it('takes % and _ in a search literally, says when nothing matches, and searches only the person\'s sites', async () => {
    for (const q of ['%', '0_-0', '\\']) {
      const page = await manager.get(`/p/${world.code}?q=${encodeURIComponent(q)}`);
      expect(page.status).to.equal(200);
      expect(subjectsOn(page.html), q).to.deep.equal([]);
    }
    expect((await manager.get(`/p/${world.code}?q=%25`)).html).to.include('No patient at your sites has a number containing “%”.');
    expect(subjectsOn((await site01.get(`/p/${world.code}?q=02-`)).html)).to.deep.equal([]);
    expect(subjectsOn((await site01.get(`/p/${world.code}?after=01-055`)).html)).to.deep.equal(['01-056']);
    expect((await site01.get(`/p/${world.code}?q=a&q=b&after=x&after=y`)).status, 'repeated parameters').to.equal(200);
    expect((await site01.get(`/p/${world.code}?q=${'x'.repeat(5000)}`)).status, 'a very long search').to.equal(200);

    const own = await app.call('POST', `/api/v1/studies/${world.code}/patients`, {
      key: world.key, body: { site: '01', subject: '01-AbC9', sex: 'male', birth_year: 1970, enrolled_on: '2026-01-10' },
    });
    expect(own.status).to.equal(201);
    expect(subjectsOn((await site01.get(`/p/${world.code}?q=abc`)).html), 'any case').to.deep.equal(['01-AbC9']);
  });
});
