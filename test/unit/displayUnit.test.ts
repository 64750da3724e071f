import { expect } from 'chai';
import { displayUnit } from '../../src/domain/studyDesign/displayUnit.js';

describe('displayUnit: a UCUM code as people read it', () => {
  it('shows the demo study\'s units the usual way', () => {
    const shown = ['mm[Hg]', '10*3/uL', '10*12/L', 'Cel', 'umol/L', 'mmol/L', 'mL/min/{1.73_m2}', '/min', 'kg', 'cm', '%', 'g/dL', 'U/L', 'ug/mL']
      .map(displayUnit);
    expect(shown).to.deep.equal(['mmHg', '10³/µL', '10¹²/L', '°C', 'µmol/L', 'mmol/L', 'mL/min/1.73 m²', '/min', 'kg', 'cm', '%', 'g/dL', 'U/L', 'µg/mL']);
  });

  it('falls back to the code for a unit it has no rule for, and leaves units that merely contain a u alone', () => {
    expect(['[arb\'U]', 'kU/L', 'mU/L', 'h'].map(displayUnit)).to.deep.equal(['[arb\'U]', 'kU/L', 'mU/L', 'h']);
  });
});
