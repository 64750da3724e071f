import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import * as yaml from 'js-yaml';
import { FIELD_ISSUE_CODES } from '../../src/domain/records/recordContent.js';
import { RECORD_RESULT_CODES } from '../../src/domain/records/submitRecords.js';
import { en } from '../../src/messages/en.js';
import { ru } from '../../src/messages/ru.js';
import { issueMessageKey, resultMessageKey } from '../../src/handlers/presenters/recordResults.js';

const placeholders = (text: string | undefined) => [...(text ?? '').matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();

/** Every text a per-record result can show: each result code with each of its variants, and each field issue. */
const RESULT_KEYS = [...new Set(RECORD_RESULT_CODES.flatMap((code) =>
  [{ queriesOpened: 0, params: {} }, { queriesOpened: 1, params: {} }, { queriesOpened: 2, params: { draft: false } }, { queriesOpened: 0, params: { draft: true } }]
    .map((variant) => resultMessageKey({ code, ...variant }))))];
const ISSUE_KEYS = FIELD_ISSUE_CODES.flatMap((code) =>
  code === 'out_of_range' ? ['below', 'above'].map((variant) => issueMessageKey({ field: 'x', code, params: { variant } })!) : [issueMessageKey({ field: 'x', code })!]);

describe('records: every per-record result and field issue has an English and a Russian text', () => {
  for (const key of [...RESULT_KEYS, ...ISSUE_KEYS]) {
    it(key, () => {
      expect(en[key], `English ${key}`).to.be.a('string').and.not.equal('');
      expect(ru[key], `Russian ${key}`).to.be.a('string').and.not.equal('');
      expect(ru[key]).not.to.equal(en[key]);
      expect(placeholders(ru[key]), 'the same parameters in both languages').to.deep.equal(placeholders(en[key]));
    });
  }

  it('states the number of queries opened in every text that reports them', () => {
    for (const key of ['record.saved_with_queries.queries', 'record.validated.queries']) {
      expect(placeholders(en[key])).to.include('queries');
      expect(placeholders(ru[key])).to.include('queries');
    }
    for (const key of ['record.saved_with_queries.one', 'record.validated.one']) {
      expect(en[key]).to.match(/\b1 automatic query\b/);
      expect(ru[key]).to.include('1 автоматический запрос');
    }
  });

  it('knows exactly the result codes the contract lists (spec/openapi.yaml, RecordResult.code)', () => {
    const spec = yaml.load(readFileSync('spec/openapi.yaml', 'utf8')) as { components: { schemas: { RecordResult: { properties: { code: { description: string } } } } } };
    const listed = [...spec.components.schemas.RecordResult.properties.code.description.matchAll(/`(\w+)`/g)].map((m) => m[1]);
    expect([...listed].sort()).to.deep.equal([...RECORD_RESULT_CODES].sort());
  });
});
