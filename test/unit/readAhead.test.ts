import { expect } from 'chai';
import { createReadAhead, READ_AHEAD_MS } from '../../src/db/readAhead.js';
import type { PageRequest, ReadFilters, ReadScope } from '../../src/domain/stores.js';
import { at } from '../helpers/only.js';

const SCOPE: ReadScope = { studyId: 1, siteIds: [1, 2], hiddenFormIds: [] };
/** A study whose patients nobody removes. */
const noRemovals = () => Promise.resolve(0);
/** The watermark of the run the tests' pages belong to. */
const RUN = '2026-11-26T09:00:00.000Z';
const ROWS = Array.from({ length: 10 }, (_, i) => ({ id: (i + 1) * 10 }));

/** A page query over ROWS that records each query it was asked, as readPages would run it. */
function pagesOf(failing = new Set<number>()) {
  const asked: PageRequest[] = [];
  const query = (_scope: ReadScope, _filters: ReadFilters, page: PageRequest) => {
    asked.push(page);
    if (failing.has(page.afterId)) return Promise.reject(new Error('connection lost'));
    return Promise.resolve(ROWS.filter((r) => r.id > page.afterId).slice(0, page.limit));
  };
  return { asked, query };
}

/** Pages as readPage asks for them: one row more than it returns, then after the last row returned. */
async function run(pages: (scope: ReadScope, filters: ReadFilters, page: PageRequest) => Promise<{ id: number }[]>, limit: number, scopes = () => SCOPE) {
  const seen: number[][] = [];
  let afterId = 0;
  for (;;) {
    const fetched = await pages(scopes(), {}, { afterId, limit: limit + 1, updatedSince: null, watermark: RUN });
    const rows = fetched.slice(0, limit);
    seen.push(rows.map((r) => r.id));
    if (fetched.length <= limit) return seen;
    afterId = at(rows, rows.length - 1, 'the page').id;
  }
}

describe('read-ahead of paging runs (src/db/readAhead.ts)', () => {
  it('returns the same pages as the plain query, reading each next page once, ahead, and none past the last', async () => {
    const plain = pagesOf();
    const expected = await run(plain.query, 3);
    const { asked, query } = pagesOf();
    const pages = createReadAhead(noRemovals).pages('records', query);
    expect(await run(pages, 3)).to.deep.equal(expected);
    expect(expected).to.deep.equal([[10, 20, 30], [40, 50, 60], [70, 80, 90], [100]]);
    // The first page, then each next one read ahead: four queries, as many as the plain run made.
    expect(asked.map((p) => p.afterId)).to.deep.equal([0, 30, 60, 90]);
  });

  it('serves a page read ahead only to its own run: a run begun later, with another watermark, queries afresh', async () => {
    // A client that starts its load again (a retry) asks the same pages: a page read ahead for the first run was
    // read before the second run's watermark, so a change committed in between would be in neither that page nor
    // the next incremental load, which starts from the second run's watermark.
    const { asked, query } = pagesOf();
    const pages = createReadAhead(noRemovals).pages('records', query);
    await pages(SCOPE, {}, { afterId: 0, limit: 4, updatedSince: null, watermark: RUN });
    const again = '2026-11-26T09:00:01.500Z';
    await pages(SCOPE, {}, { afterId: 0, limit: 4, updatedSince: null, watermark: again });
    const second = await pages(SCOPE, {}, { afterId: 30, limit: 4, updatedSince: null, watermark: again });
    expect(second.map((r) => r.id)).to.deep.equal([40, 50, 60, 70]);
    // The second run read its own second page (and the third ahead): the first run's, ahead, was not served to it.
    expect(asked.map((p) => [p.afterId, p.watermark])).to.deep.equal([[0, RUN], [30, RUN], [0, again], [30, again], [60, again]]);
  });

  it('serves a page read ahead only to the exact query it answers: another scope, filter or limit queries afresh', async () => {
    const { asked, query } = pagesOf();
    const pages = createReadAhead(noRemovals).pages('records', query);
    await pages(SCOPE, {}, { afterId: 0, limit: 4, updatedSince: null, watermark: RUN });
    // The key lost site 2 between the pages: the page read for both sites is not served.
    const narrower = await pages({ ...SCOPE, siteIds: [1] }, {}, { afterId: 30, limit: 4, updatedSince: null, watermark: RUN });
    expect(narrower.map((r) => r.id)).to.deep.equal([40, 50, 60, 70]);
    expect(asked.map((p) => p.afterId)).to.deep.equal([0, 30, 30, 60]);
    await pages(SCOPE, { formId: 3 }, { afterId: 30, limit: 4, updatedSince: null, watermark: RUN });
    await pages(SCOPE, {}, { afterId: 30, limit: 5, updatedSince: null, watermark: RUN });
    // Each of them queried afresh, and read its own next page ahead.
    expect(asked.map((p) => p.afterId)).to.deep.equal([0, 30, 30, 60, 30, 60, 30, 70]);
    // And the patients call never gets a records page.
    const patients = createReadAhead(noRemovals).pages('patients', query);
    await patients(SCOPE, {}, { afterId: 30, limit: 4, updatedSince: null, watermark: RUN });
    expect(asked.length).to.equal(10);
  });

  it('serves a page read ahead once, and not once it is older than READ_AHEAD_MS', async () => {
    let clock = 1_000_000;
    const { asked, query } = pagesOf();
    const pages = createReadAhead(noRemovals, () => clock).pages('records', query);
    await pages(SCOPE, {}, { afterId: 0, limit: 4, updatedSince: null, watermark: RUN });
    clock += READ_AHEAD_MS + 1;
    await pages(SCOPE, {}, { afterId: 30, limit: 4, updatedSince: null, watermark: RUN });
    expect(asked.map((p) => p.afterId)).to.deep.equal([0, 30, 30, 60]);
    clock += READ_AHEAD_MS;
    await pages(SCOPE, {}, { afterId: 60, limit: 4, updatedSince: null, watermark: RUN });
    // Served from the read ahead (no query at 60), which then reads the page after it.
    expect(asked.map((p) => p.afterId)).to.deep.equal([0, 30, 30, 60, 90]);
    // The same position again: the page read ahead was used up, so the query runs.
    await pages(SCOPE, {}, { afterId: 60, limit: 4, updatedSince: null, watermark: RUN });
    expect(asked.map((p) => p.afterId)).to.deep.equal([0, 30, 30, 60, 90, 60, 90]);
  });

  it('does not serve a page read before a patient of the study was removed (withdrew consent to data use)', async () => {
    let removals = 0;
    const { asked, query } = pagesOf();
    const pages = createReadAhead(() => Promise.resolve(removals)).pages('patients', query);
    await pages(SCOPE, {}, { afterId: 0, limit: 4, updatedSince: null, watermark: RUN });
    await new Promise((resolve) => setImmediate(resolve));
    expect(asked.map((p) => p.afterId), 'the next page was read ahead').to.deep.equal([0, 30]);
    removals = 1;
    await pages(SCOPE, {}, { afterId: 30, limit: 4, updatedSince: null, watermark: RUN });
    // Queried afresh at 30: the page read ahead is dropped.
    expect(asked.map((p) => p.afterId)).to.deep.equal([0, 30, 30, 60]);
    // With no removal since, the page read ahead is served again.
    await pages(SCOPE, {}, { afterId: 60, limit: 4, updatedSince: null, watermark: RUN });
    expect(asked.map((p) => p.afterId)).to.deep.equal([0, 30, 30, 60, 90]);
  });

  it('queries again when the read ahead failed, and keeps no failure', async () => {
    const { asked, query } = pagesOf(new Set([30]));
    const pages = createReadAhead(noRemovals).pages('records', query);
    await pages(SCOPE, {}, { afterId: 0, limit: 4, updatedSince: null, watermark: RUN });
    let error: unknown;
    await pages(SCOPE, {}, { afterId: 30, limit: 4, updatedSince: null, watermark: RUN }).catch((e) => { error = e; });
    expect(String(error)).to.contain('connection lost');
    expect(asked.map((p) => p.afterId)).to.deep.equal([0, 30, 30]);
  });
});
