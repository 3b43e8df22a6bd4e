// The soak's per-caller ceiling: the limit plus the documented bound, and the limit once more per restart without data within the window.
import { overAdmissionBound } from '../src/bounds';
import { admissionCeiling, INSTANCES, LIMIT, OVERLOAD_LIMIT } from '../src/soak';

it('allows the limit plus the bound in a window, and the limit again for each restart without data inside it', () => {
  expect(admissionCeiling('default')).toBe(OVERLOAD_LIMIT + overAdmissionBound(OVERLOAD_LIMIT, 1));
  expect(admissionCeiling('default', 1)).toBe(2 * OVERLOAD_LIMIT + overAdmissionBound(OVERLOAD_LIMIT, 1));
  expect(admissionCeiling('closed')).toBe(LIMIT + overAdmissionBound(LIMIT, 1));
  expect(admissionCeiling('local', 2)).toBe(3 * LIMIT + overAdmissionBound(LIMIT, INSTANCES));
});
