import { expect } from 'chai';
import type { FhirImportItem } from '../../src/domain/fhir/fhirImportItem.js';
import { importIdOf, importRefOf } from '../../src/domain/fhir/importId.js';
import { itemOutcome } from '../../src/domain/fhir/importReads.js';

/** An item of the given state; the other members do not decide its outcome. */
function item(state: FhirImportItem['state'], more: Partial<FhirImportItem> = {}): FhirImportItem {
  return {
    resource: 'Observation/1', code: { system: 'http://loinc.org', code: '8867-4', display: null }, form: 'vs', field: 'hr', row: null, visit: 'screening',
    instance: 1, value: '70', unit: '/min', original: { value: '70', unit: '/min' }, effective: null, saved_value: null, state, reason: null, chosen_by: null, candidates: [],
    ...more,
  };
}

describe('FHIR import reads: identifiers and item outcomes', () => {
  it('reads back the identifier it writes, a subject with dashes included, and nothing else', () => {
    for (const [subject, number] of [['01-001', 3], ['P0001-02', 1], ['01-HIS-4711', 123456789]] as const) {
      expect(importRefOf('DEMO', importIdOf('DEMO', subject, number))).to.deep.equal({ subject, number });
    }
    // Another study's prefix, no number, a number written otherwise than the service writes it, or one beyond the column.
    for (const id of ['OTHER-01-001-3', 'DEMO-01-001', 'DEMO-3', 'DEMO--3', 'DEMO-01-001-03', 'DEMO-01-001-0', 'DEMO-01-001-1e3', 'DEMO-01-001-1234567890', 'demo-01-001-3']) {
      expect(importRefOf('DEMO', id), id).to.equal(null);
    }
  });

  it('derives what became of an item from its state and the import\'s status, unless the confirmation marked it', () => {
    const waiting = [item('new'), item('conflict', { saved_value: '65' }), item('skipped', { value: null, reason: 'not_chosen', tie: true })];
    expect(waiting.map((i) => itemOutcome('proposed', i))).to.deep.equal(['pending', 'pending', 'pending']);
    expect(waiting.map((i) => itemOutcome('rejected', i))).to.deep.equal(['rejected', 'rejected', 'rejected']);
    expect(waiting.map((i) => itemOutcome('confirmed', i))).to.deep.equal(['not_taken', 'not_taken', 'not_taken']);
    expect(itemOutcome('confirmed', item('saved', { outcome: 'confirmed' }))).to.equal('confirmed');
    expect(itemOutcome('confirmed', item('conflict', { outcome: 'kept_saved_value' }))).to.equal('kept_saved_value');
    // Saved by save mode when the file came, before any decision.
    expect(itemOutcome('confirmed', item('saved'))).to.equal('saved');
    expect(itemOutcome('rejected', item('same'))).to.equal('same');
    expect(itemOutcome('proposed', item('skipped', { value: null, reason: 'no_mapping' }))).to.equal('skipped');
  });
});
