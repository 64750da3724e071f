import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { auditValueView } from '../../src/domain/patients/auditValues.js';
import { parseStudyDesign } from '../../src/domain/studyDesign/parseStudyDesign.js';

const design = parseStudyDesign(readFileSync('studies/demo.yaml', 'utf8'));
const form = (code: string) => design.forms.find((f) => f.code === code)!;

describe('auditValueView: an audit trail value as the patient card shows it', () => {
  it('gives a choice with its label, a value with its display unit, a mark and a status as codes for words', () => {
    expect(auditValueView('record.value_changed', form('dm'), 'sex', '2')).to.deep.equal({ kind: 'text', text: '2 — Male' });
    expect(auditValueView('record.value_set', form('vs'), 'sbp', '232')).to.deep.equal({ kind: 'text', text: '232 mmHg' });
    expect(auditValueView('record.value_set', form('vs'), 'rr', '[ND]')).to.deep.equal({ kind: 'notDone', mark: 'ND' });
    expect(auditValueView('record.status_changed', form('vs'), null, 'draft')).to.deep.equal({ kind: 'status', status: 'draft' });
  });

  it('shows a text written like a mark as text when its row says so, and as the mark when it says so or says nothing (older rows)', () => {
    expect(auditValueView('record.value_changed', form('ip_alloc'), 'kit', '[ND]', 'value')).to.deep.equal({ kind: 'text', text: '[ND]' });
    expect(auditValueView('record.value_changed', form('ip_alloc'), 'kit', '[ND]', 'not_done')).to.deep.equal({ kind: 'notDone', mark: 'ND' });
    expect(auditValueView('record.value_changed', form('ip_alloc'), 'kit', '[UNK]')).to.deep.equal({ kind: 'notDone', mark: 'UNK' });
  });

  it('gives a table row by row with column labels, and a JSON object that is no field\'s as name: value pairs', () => {
    expect(auditValueView('record.value_set', form('mh'), 'conditions', '[{"term":"Asthma","ongoing":"no"},{"term":"Gout"}]'))
      .to.deep.equal({ kind: 'rows', rows: ['Condition: Asthma; Ongoing: no', 'Condition: Gout'] });
    expect(auditValueView('patient.fhir_identity_linked', undefined, null, '{"system":"urn:oid:1.2","value":"MRN-1"}'))
      .to.deep.equal({ kind: 'text', text: 'system: urn:oid:1.2; value: MRN-1' });
    expect(auditValueView('query.opened', form('vs'), 'sbp', 'Value 232 is above')).to.deep.equal({ kind: 'text', text: 'Value 232 is above' });
    expect(auditValueView('patient.enrolled', undefined, null, null)).to.equal(null);
  });
});
