// The fleet count, fed the counts an announcement answers (the store's `announce`, as a Redis restarted without its data would answer) on fake timers: a rise is believed at once, a drop only once it has lasted an announcement's lifetime.
import { ANNOUNCE_TTL_PERIODS, FleetCount } from '../src/failure/fleet-count';

const PERIOD_MS = 10_000;
const LIFETIME_MS = ANNOUNCE_TTL_PERIODS * PERIOD_MS;

beforeEach(() => jest.useFakeTimers()); // performance.now() and the fleet's timers move only with the test
afterEach(() => jest.useRealTimers());

/** A fleet whose n-th announcement answers answers[n] (the last one from then on), and the announcements made. */
function fleetAnswering(answers: number[]) {
  const made: number[] = [];
  const announce = async (_key: string, _id: string, ttlMs: number): Promise<number> => {
    made.push(ttlMs);
    return answers[Math.min(made.length, answers.length) - 1];
  };
  return { fleet: new FleetCount('fc', announce, PERIOD_MS), made };
}

it('keeps the count of 3 when Redis, restarted without data, answers 1: the drop is believed only after one announcement lifetime', async () => {
  const { fleet, made } = fleetAnswering([3, 1]);
  await jest.advanceTimersByTimeAsync(0); // the first announcement
  expect(fleet.instances).toBe(3);
  await jest.advanceTimersByTimeAsync(250); // the second (early) one: Redis has lost the ZSET
  expect(made).toHaveLength(2);
  expect(fleet.instances).toBe(3);
  // Every announcement of the next lifetime answers 1; the count stays 3 all through it.
  await jest.advanceTimersByTimeAsync(LIFETIME_MS - 250 - 1);
  expect(made.length).toBeGreaterThan(3);
  expect(fleet.instances).toBe(3);
  // Once the 3 is older than a lifetime (at the next announcement after it), the fleet is 1.
  await jest.advanceTimersByTimeAsync(PERIOD_MS);
  expect(fleet.instances).toBe(1);
  expect(made.every((ttl) => ttl === LIFETIME_MS)).toBe(true);
});

it('believes a rise at once', async () => {
  const { fleet } = fleetAnswering([1, 4]);
  await jest.advanceTimersByTimeAsync(0);
  expect(fleet.instances).toBe(1);
  await jest.advanceTimersByTimeAsync(250);
  expect(fleet.instances).toBe(4);
});

it('keeps the last count through failed announcements, and counts at least itself', async () => {
  let n = 0;
  const fleet = new FleetCount('fc', async () => (++n === 2 ? Promise.reject(new Error('down')) : 0), PERIOD_MS);
  await jest.advanceTimersByTimeAsync(0);
  expect(fleet.instances).toBe(1); // an answer of 0 (this one not yet in the ZSET) still counts itself
  await jest.advanceTimersByTimeAsync(250);
  expect({ instances: fleet.instances, failures: fleet.failures }).toEqual({ instances: 1, failures: 1 });
});

it('after an outage longer than a lifetime, a Redis restarted without data answering 1 is still not believed at once', async () => {
  let answer: number | 'down' = 3;
  const fleet = new FleetCount('fc', async () => (answer === 'down' ? Promise.reject(new Error('down')) : answer), PERIOD_MS);
  await jest.advanceTimersByTimeAsync(0);
  expect(fleet.instances).toBe(3);
  // Redis away for two lifetimes: every announcement fails, the count of 3 is kept.
  answer = 'down';
  await jest.advanceTimersByTimeAsync(2 * LIFETIME_MS);
  expect(fleet.instances).toBe(3);
  // Back, without its data: only this instance has announced yet.
  answer = 1;
  await jest.advanceTimersByTimeAsync(PERIOD_MS);
  expect(fleet.instances).toBe(3);
  // The drop is believed once it has lasted a lifetime of answers.
  await jest.advanceTimersByTimeAsync(LIFETIME_MS + PERIOD_MS);
  expect(fleet.instances).toBe(1);
});
