import { expect } from 'chai';
import type { AnswerOf } from './answerTypes.js';
import type { Reply, TestApp } from './testApp.js';

/** Each read call's page, by the member that holds its rows. */
interface ReadPages {
  patients: AnswerOf<'listPatients', 200>;
  records: AnswerOf<'listFormRecords', 200>;
  queries: AnswerOf<'listQueries', 200>;
  audit: AnswerOf<'listAuditTrail', 200>;
}
type ReadMember = keyof ReadPages;
type RowOf<M extends ReadMember> = ReadPages[M] extends Record<M, (infer Row)[]> ? Row : never;

/**
 * A run of a read call: follows `next` to the last page, every page answering 200.
 *
 * @param path - the call's address without a query, e.g. `/api/v1/studies/DEMO/records`
 * @param member - the page's member holding the rows (`records`, `audit`, …)
 */
export async function readRun<M extends ReadMember>(
  app: TestApp, path: string, member: M, key: string, query: Record<string, string> = {},
): Promise<{ rows: RowOf<M>[]; pages: Reply<ReadPages[M]>[] }> {
  const pages: Reply<ReadPages[M]>[] = [];
  let after: string | null = null;
  do {
    const page: Reply<ReadPages[M]> = await app.call<ReadPages[M]>('GET', `${path}?${new URLSearchParams({ ...query, ...(after ? { after } : {}) })}`, { key });
    expect(page.status, JSON.stringify(page.body)).to.equal(200);
    pages.push(page);
    after = page.body.next;
  } while (after);
  // Every page of `member`'s call holds its rows under `member` (ReadPages); TypeScript cannot index a page chosen by M with M.
  return { rows: pages.flatMap((p) => (p.body as Record<M, RowOf<M>[]>)[member]), pages };
}
