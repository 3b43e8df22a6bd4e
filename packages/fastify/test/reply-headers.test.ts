// lowerCaseAt: the last name seen at a place of a header list answers for it; any other name there is lowered on its own.
import { DIRECT_PLACES, isEmpty, lowerCaseAt } from '../src/reply-headers';

it('answers each name in lower case whatever name was last seen at that place', () => {
  expect(lowerCaseAt('RateLimit-Limit', 0)).toBe('ratelimit-limit');
  expect(lowerCaseAt('RateLimit-Limit', 0)).toBe('ratelimit-limit');
  // Another name at the same place (another dialect, another route's list): its own lower case, not the last one's.
  expect(lowerCaseAt('X-RateLimit-Limit', 0)).toBe('x-ratelimit-limit');
  expect(lowerCaseAt('RateLimit-Limit', 0)).toBe('ratelimit-limit');
  // A name equal in content but built at run time (another string object) is the same name.
  expect(lowerCaseAt(['Retry', 'After'].join('-'), DIRECT_PLACES + 4)).toBe('retry-after');
  expect(lowerCaseAt('Retry-After', DIRECT_PLACES + 4)).toBe('retry-after');
  // Past the places kept: still lowered.
  expect(lowerCaseAt('Floodgate-Reset-Ms', 500)).toBe('floodgate-reset-ms');
});

it('isEmpty: own enumerable names only', () => {
  expect(isEmpty({})).toBe(true);
  expect(isEmpty({ a: 1 })).toBe(false);
  expect(isEmpty(Object.create({ inherited: 1 }) as Record<string, unknown>)).toBe(true);
});
