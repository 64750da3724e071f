import { expect } from 'chai';
import { isDomainError } from '../../src/domain/errors.js';
import { answerRefusal, closeRefusal, QUERY_TEXT_MAX, queryablePlace, queryText } from '../../src/domain/queries/queryRules.js';
import type { ActorRef } from '../../src/domain/actor.js';
import type { QueryForStep } from '../../src/domain/stores.js';
import { demoDesign } from '../helpers/factories.js';

const demo = demoDesign();
const formOf = (code: string) => demo.forms.find((f) => f.code === code)!;

describe('queries: which step a query takes (issue 22.2)', () => {
  const key7: ActorRef = { type: 'api_key', id: 7 };
  const key8: ActorRef = { type: 'api_key', id: 8 };
  const person7: ActorRef = { type: 'user', id: 7 };
  const query = (status: QueryForStep['status'], opener: ActorRef | null) => ({ status, opener });

  describe('closeRefusal', () => {
    const cases: { name: string; status: QueryForStep['status']; opener: ActorRef | null; closer: ActorRef; refusal: string | null }[] = [
      { name: 'the key that raised it closes its open query', status: 'open', opener: key7, closer: key7, refusal: null },
      { name: 'another key may not close an open query', status: 'open', opener: key7, closer: key8, refusal: 'query_not_closable' },
      { name: 'a person with the same id as the raising key is another actor', status: 'open', opener: key7, closer: person7, refusal: 'query_not_closable' },
      { name: 'nobody closes an open automatic query: its value is corrected, or it is answered first', status: 'open', opener: null, closer: key7, refusal: 'query_not_closable' },
      { name: 'any writer closes an answered query', status: 'answered', opener: key7, closer: key8, refusal: null },
      { name: 'any writer closes an answered automatic query', status: 'answered', opener: null, closer: person7, refusal: null },
      { name: 'a closed query is not closed again, even by its opener', status: 'closed', opener: key7, closer: key7, refusal: 'query_closed' },
    ];
    for (const c of cases) it(c.name, () => expect(closeRefusal(query(c.status, c.opener), c.closer)).to.equal(c.refusal));
  });

  describe('answerRefusal', () => {
    for (const [status, refusal] of [['open', null], ['answered', null], ['closed', 'query_closed']] as const) {
      it(`${status}: ${refusal ?? 'takes an answer'}`, () => expect(answerRefusal({ status })).to.equal(refusal));
    }
  });

  describe('queryText', () => {
    const refusal = (text: string) => {
      try {
        queryText(text, '/text');
        return null;
      } catch (error) {
        if (!isDomainError(error)) throw error;
        return [error.code, error.fieldErrors.map((e) => `${e.pointer} ${e.code}`)];
      }
    };
    it('keeps a text as sent', () => expect(queryText('  Value confirmed.\n', '/text')).to.equal('  Value confirmed.\n'));
    it('refuses an empty text', () => expect(refusal('')).to.deep.equal(['invalid_body', ['/text required']]));
    it('refuses a blank text', () => expect(refusal(' \t\n ')).to.deep.equal(['invalid_body', ['/text required']]));
    it('refuses a NUL', () => expect(refusal('a\u0000b')).to.deep.equal(['invalid_body', ['/text invalid_character']]));
    it('takes the longest text and refuses one character more', () => {
      expect(refusal('x'.repeat(QUERY_TEXT_MAX))).to.equal(null);
      expect(refusal('x'.repeat(QUERY_TEXT_MAX + 1))).to.deep.equal(['invalid_body', ['/text too_long']]);
    });
  });

  describe('queryablePlace', () => {
    const tables = { conditions: [{ term: 'Hypertension' }, { term: 'Asthma' }] };
    const cases: [string, string, string, boolean][] = [
      ['a field of the form', 'vs', 'sbp', true],
      ['a field of another form', 'vs', 'height', false],
      ['an unknown code', 'vs', 'shoe_size', false],
      ['a cell of a saved row', 'mh', 'conditions[1].term', true],
      ['a cell of a row the record does not hold', 'mh', 'conditions[2].term', false],
      ['an unknown column', 'mh', 'conditions[0].colour', false],
      ['cell syntax on a field that is no table', 'vs', 'sbp[0].term', false],
      ['a whole table field', 'mh', 'conditions', true],
    ];
    for (const [name, form, field, known] of cases) it(name, () => expect(queryablePlace(formOf(form), field, tables)).to.equal(known));
  });
});
