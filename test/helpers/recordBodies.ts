import type { RecordInput } from '../../src/domain/records/submitRecords.js';
import { at } from './only.js';

/**
 * A full records call for a study of the demo design: `count` new forms of the repeating unscheduled
 * visit, spread over `subjects` (enrolled, with consent). Four in five are vital signs: every 7th with a
 * systolic pressure above its range (a range query), every 9th with a diastolic pressure above the
 * systolic (an edit-check query), every 11th a draft; the fifth is an adverse-event table. The body
 * depends on the subjects alone, so the same call can go to two studies and their outcomes be compared.
 */
export function unscheduledVisitsBody(subjects: string[], count = 500): { records: RecordInput[] } {
  const instances = new Map<string, number>();
  const records = Array.from({ length: count }, (_, i): RecordInput => {
    const subject = at(subjects, i % subjects.length, 'the subjects');
    const form = i % 5 === 4 ? 'ae' : 'vs';
    const instance = (instances.get(`${subject}/${form}`) ?? 0) + 1;
    instances.set(`${subject}/${form}`, instance);
    const placed = { subject, visit: 'unscheduled', form, instance };
    if (form === 'ae') return { ...placed, tables: { events: [{ term: `Headache ${i}`, onset: '2026-02-02', severity: 'mild', serious: 'no' }] } };
    const values = { vsdate: '2026-02-01', sbp: i % 7 === 0 ? '232' : '120', dbp: i % 9 === 0 ? '125' : '80', hr: String(60 + (i % 30)) };
    return { ...placed, values, ...(i % 11 === 0 ? { status: 'draft' as const } : {}) };
  });
  return { records };
}
