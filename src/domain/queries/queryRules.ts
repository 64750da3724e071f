import type { ActorRef } from '../actor.js';
import type { ErrorCode } from '../errorCodes.js';
import { DomainError } from '../errors.js';
import { isStorableText } from '../storableText.js';
import type { QueryForStep } from '../stores.js';
import type { FormDef } from '../studyDesign/types.js';

/** The longest message, answer or reason (spec, QueryText): the API's schema holds it, and the portal meets it here. */
export const QUERY_TEXT_MAX = 2000;

/**
 * A query's message, an answer or a closing reason as it will be kept: refused when blank (a step
 * on a query must say something), unstorable or too long, with the pointer of the member it came in.
 */
export function queryText(text: string, pointer: string): string {
  if (!text.trim()) throw new DomainError('invalid_body', {}, [{ pointer, code: 'required' }]);
  if (!isStorableText(text)) throw new DomainError('invalid_body', {}, [{ pointer, code: 'invalid_character' }]);
  if (text.length > QUERY_TEXT_MAX) throw new DomainError('invalid_body', {}, [{ pointer, code: 'too_long', params: { max: QUERY_TEXT_MAX } }]);
  return text;
}

/** Why a query takes no answer: a closed query's thread is final. */
export function answerRefusal(query: Pick<QueryForStep, 'status'>): ErrorCode | null {
  return query.status === 'closed' ? 'query_closed' : null;
}

/**
 * Why `closer` may not close the query (issue 22.2): an answered query may be closed by any writer of
 * its site, an open one only by whoever raised it; anyone else's open query waits for its answer.
 */
export function closeRefusal(query: Pick<QueryForStep, 'status' | 'opener'>, closer: ActorRef): ErrorCode | null {
  if (query.status === 'closed') return 'query_closed';
  if (query.status === 'answered') return null;
  const raisedByCloser = query.opener !== null && query.opener.type === closer.type && query.opener.id === closer.id;
  return raisedByCloser ? null : 'query_not_closable';
}

const TABLE_CELL = /^([A-Za-z0-9_]+)\[(\d+)\]\.([A-Za-z0-9_]+)$/;

/**
 * Whether `field` names a place of the form that a query can ask about: one of its fields, or a cell
 * `<table>[<row>].<column>` of a table row the saved record holds (the form automatic queries use).
 */
export function queryablePlace(form: FormDef, field: string, tables: Record<string, unknown[]>): boolean {
  const cell = TABLE_CELL.exec(field);
  if (!cell) return form.fields.some((f) => f.code === field);
  const [, table = '', row, column] = cell;
  const def = form.fields.find((f) => f.code === table);
  return def?.type === 'table' && def.columns.some((c) => c.code === column) && Number(row) < (tables[table]?.length ?? 0);
}
