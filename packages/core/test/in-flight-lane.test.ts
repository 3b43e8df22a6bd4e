// InFlightLane, RedisStore's bound on calls in flight per node, on a clock the test moves: a freed place goes to the first waiting call that still has time, never to one past its deadline.
import { InFlightLane } from '../src/stores/redis/in-flight';

// The lane's one timer would fire on the real clock and find the test's clock unmoved, forever:
// fake timers hold it, so only the test's clock and the releases act.
beforeEach(() => jest.useFakeTimers());
afterEach(() => jest.useRealTimers());

/** A lane of `max` places on a clock only the test moves, and what happened to each waiting call. */
function laneOf(max: number) {
  let now = 1_000;
  const lane = new InFlightLane(max, () => now);
  const log: string[] = [];
  const wait = (name: string, budgetMs: number) =>
    lane.wait(
      budgetMs,
      (left) => void log.push(`${name} sent with ${left} ms left`),
      () => void log.push(`${name} refused`),
    );
  return { lane, log, wait, advance: (ms: number) => void (now += ms) };
}

it('a release gives the place to the first waiting call with time left, and refuses those past their deadline (a timer that ran late)', () => {
  const { lane, log, wait, advance } = laneOf(1);
  expect(lane.tryTake()).toBe(true);
  wait('a', 50); // deadline at 1050
  wait('b', 500); // deadline at 1500
  // The lane's timer for `a` (at 1050) has not run: the release comes first, at 1100.
  advance(100);
  lane.release();
  expect(log).toEqual(['a refused', 'b sent with 400 ms left']);
  expect(lane.inFlight).toBe(1);
  lane.release();
  expect(lane.idle).toBe(true);
});

it('a call whose deadline is exactly now is not sent (it has no time left)', () => {
  const { lane, log, wait, advance } = laneOf(1);
  lane.tryTake();
  wait('a', 50);
  advance(50);
  lane.release();
  expect(log).toEqual(['a refused']);
  expect(lane.idle).toBe(true);
});

it('fills every free place in arrival order, and takes none beyond max', () => {
  const { lane, log, wait } = laneOf(2);
  expect([lane.tryTake(), lane.tryTake(), lane.tryTake()]).toEqual([true, true, false]);
  wait('a', 100);
  wait('b', 100);
  wait('c', 100);
  lane.release();
  expect(log).toEqual(['a sent with 100 ms left']);
  lane.release();
  lane.release();
  expect(log).toEqual(['a sent with 100 ms left', 'b sent with 100 ms left', 'c sent with 100 ms left']);
  expect(lane.inFlight).toBe(2);
  lane.release();
  lane.release();
  expect(lane.idle).toBe(true);
});
