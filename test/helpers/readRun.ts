import { expect } from 'chai';
import type { Reply, TestApp } from './testApp.js';

type Row = Record<string, any>;

/**
 * A run of a read call: follows `next` to the last page, every page answering 200.
 *
 * @param path - the call's address without a query, e.g. `/api/v1/studies/DEMO/records`
 * @param member - the page's member holding the rows (`records`, `audit`, …)
 */
export async function readRun(app: TestApp, path: string, member: string, key: string, query: Record<string, string> = {}): Promise<{ rows: Row[]; pages: Reply[] }> {
  const pages: Reply[] = [];
  let after: string | null = null;
  do {
    const page: Reply = await app.call('GET', `${path}?${new URLSearchParams({ ...query, ...(after ? { after } : {}) })}`, { key });
    expect(page.status, JSON.stringify(page.body)).to.equal(200);
    pages.push(page);
    after = page.body.next;
  } while (after);
  return { rows: pages.flatMap((p) => p.body[member]), pages };
}
