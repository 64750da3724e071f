/**
 * A full garbage collection of the bench process, between timed steps. The FHIR floor parses and maps a
 * 3.8 MB file in this process, and its garbage was otherwise collected while the next call was on its way:
 * on two cores shared with the service and PostgreSQL, the bench's own collection then counted as the
 * service's time. Collecting before each timed step, call or floor alike, keeps each one's time its own.
 */
import v8 from 'node:v8';
import vm from 'node:vm';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

export function collectGarbage(): void {
  gc();
}
