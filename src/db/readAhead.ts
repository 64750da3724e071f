import type { PageRequest, ReadFilters, ReadScope } from '../domain/stores.js';

/** One page query of the read calls (src/db/readPages.ts). */
type PageQuery<Row> = (scope: ReadScope, filters: ReadFilters, page: PageRequest) => Promise<Row[]>;

/** How old a page read ahead may be when it is served; older ones are read again. */
export const READ_AHEAD_MS = 2000;
/** Pages read ahead that one service process keeps at most (about 1 MB each at limit=1000). */
const PAGES_KEPT = 16;

export interface ReadAhead {
  /** The page query, reading each run's next page while the client still takes in the current one. */
  pages<Row extends { id: number }>(kind: string, query: PageQuery<Row>): PageQuery<Row>;
}

/** A mark of a study's removals (src/db/readPages.ts `removalCount`) that changes with every withdrawal of consent to data use that commits. */
export type RemovalMark = (studyId: number) => Promise<number>;

interface PageAhead {
  rows: Promise<{ id: number }[]>;
  at: number;
  /** The study's removal mark read before the page's query began. */
  mark: Promise<number>;
}

/**
 * Read-ahead for paging runs. A client reading a study page by page waits, for every page, on the
 * page's query, and the service then waits on the client to parse the page and ask for the next; a
 * bulk read spent as long on each as on the other (bench/README.md). So when a page has a next one, the
 * next page's query starts at once, and the request for it, when it comes within READ_AHEAD_MS, is
 * answered from that query (still running or done) instead of a new one.
 *
 * Only the query is read ahead: every request is still authenticated, counted, checked and logged
 * when it comes. A page is served once, and only to a request asking exactly the query it answers
 * (kind, the key's visible sites and forms, filters, position, limit) in the same run (its watermark),
 * so a key that lost a site or a form gets a fresh query. Its rows may be up to READ_AHEAD_MS older than
 * the request, as if the client had asked that much sooner; the incremental-load rules hold all the same,
 * because the run's watermark was fixed before its first query (src/domain/reads/readPage.ts). A run begun
 * later (a client starting its load again, with pages of another size) never gets a page read for an
 * earlier one: read before the later run's watermark, it could miss a change the next load, from that
 * watermark, would not bring either.
 *
 * A patient who withdrew consent to data use is never in a page asked for after the withdrawal (issue 21.11):
 * the study's removal mark is read before a page is read ahead and again when it is served, and a page is not
 * served when a withdrawal committed in between; the request queries afresh, and the read page leaves the
 * patient out. A withdrawal committed before the first reading is seen by the page's own query, run after it.
 *
 * The next position follows readPage's way of asking: one row more than the page returns, to know
 * whether another follows; the next page starts after the last row returned.
 */
export function createReadAhead(removalMark: RemovalMark, now: () => number = Date.now): ReadAhead {
  const ahead = new Map<string, PageAhead>();

  function keep(key: string, studyId: number, read: () => Promise<{ id: number }[]>): void {
    const at = now();
    for (const [k, page] of ahead) if (at - page.at > READ_AHEAD_MS || ahead.size >= PAGES_KEPT) ahead.delete(k);
    const mark = removalMark(studyId);
    const rows = mark.then(read);
    ahead.set(key, { rows, at, mark });
    // A failed read ahead is simply not served: the request queries again.
    rows.catch(() => ahead.get(key)?.rows === rows && ahead.delete(key));
  }

  /** The page read ahead, unless a patient of the study was removed since its query began. */
  async function served<Row>(page: PageAhead, studyId: number): Promise<Row[] | undefined> {
    const [rows, then, current] = await Promise.all([page.rows, page.mark, removalMark(studyId)]).catch(() => []);
    return then !== undefined && then === current ? (rows as Row[]) : undefined;
  }

  return {
    pages<Row extends { id: number }>(kind: string, query: PageQuery<Row>): PageQuery<Row> {
      const keyOf = (scope: ReadScope, filters: ReadFilters, page: PageRequest) => JSON.stringify([kind, scope, filters, page]);
      return async (scope, filters, page) => {
        const key = keyOf(scope, filters, page);
        const read = ahead.get(key);
        ahead.delete(key);
        let rows: Row[] | undefined;
        if (read && now() - read.at <= READ_AHEAD_MS) rows = await served<Row>(read, scope.studyId);
        rows ??= await query(scope, filters, page);
        // A full page: its second-last row starts the next page (a page of one has none).
        const nextAfter = rows.length === page.limit ? rows[page.limit - 2] : undefined;
        if (nextAfter) {
          const next = { ...page, afterId: nextAfter.id };
          keep(keyOf(scope, filters, next), scope.studyId, () => query(scope, filters, next));
        }
        return rows;
      };
    },
  };
}
