import { expect } from 'chai';
import { plainText } from '../../scripts/plainText.js';

describe('plainText: the command line\'s output for people', () => {
  it('prints a single object as aligned name: value lines, lists joined and absent values as -', () => {
    expect(plainText({ study: 'DEMO', subject: '01-001', consent: 'given', data_use_withdrawn: false, sites: ['01', '02'], revoked_at: null }))
      .to.equal([
        'study:              DEMO',
        'subject:            01-001',
        'consent:            given',
        'data_use_withdrawn: false',
        'sites:              01,02',
        'revoked_at:         -',
        '',
      ].join('\n'));
  });

  it('prints a list of objects as a table with a header and aligned columns, after the other members', () => {
    const at = new Date('2026-11-25T10:00:00.000Z');
    expect(plainText({
      study: 'DEMO',
      keys: [
        { id: 1, name: 'Demo LIMS', state: 'revoked', rights: ['read', 'write'], last_used_at: null },
        { id: 12, name: 'Lab', state: 'active', rights: ['write'], last_used_at: at },
      ],
    })).to.equal([
      'study: DEMO',
      '',
      'keys (2):',
      'id  name       state    rights      last_used_at',
      '1   Demo LIMS  revoked  read,write  -',
      '12  Lab        active   write       2026-11-25T10:00:00.000Z',
      '',
    ].join('\n'));
  });

  it('prints an empty list as -, and a nested object as name=value pairs', () => {
    expect(plainText({ study: 'DEMO', reads: [], counts: { values: 6, skipped: 0 } })).to.equal('study:  DEMO\nreads:  -\ncounts: values=6 skipped=0\n');
  });
});
