// Moving the application's clock (Date.now, performance.now) by hours either way changes nothing RedisStore decides: the scripts read Redis TIME.
import { startRedis, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import { createLimiter, RedisStore, type AlgorithmName, type Decision, type LimiterOptions } from '../src';

const HOUR = 3_600_000;
/** Application clock offsets, applied in turn: forward and back by hours and days, none a whole window. */
const SHIFTS = [0, 2.5 * HOUR, -3.25 * HOUR, 26.4 * HOUR, -49.1 * HOUR, 7 * 24 * HOUR + 1234, -0.5 * HOUR, 0];
const ALGORITHMS: readonly AlgorithmName[] = ['fixed-window', 'sliding-window-log', 'sliding-window-counter', 'token-bucket', 'gcra'];

let server: RedisServer;
let client: Redis;
const realDateNow = Date.now.bind(Date);
const realPerformanceNow = performance.now.bind(performance);

beforeAll(async () => {
  server = await startRedis();
  client = server.client({ autoResendUnfulfilledCommands: false });
  await client.ping();
}, 30_000);

afterEach(() => jest.restoreAllMocks());

afterAll(async () => {
  client?.disconnect();
  await server?.stop();
});

/** Moves Date.now and performance.now by `ms` from the real clocks (real time keeps running under it). */
function shiftAppClock(ms: number): void {
  jest.spyOn(Date, 'now').mockImplementation(() => realDateNow() + ms);
  jest.spyOn(performance, 'now').mockImplementation(() => realPerformanceNow() + ms);
}

/** 5 per hour; token-bucket and gcra refill 5 per hour: trusting a clock hours off would refill them. */
function options(algorithm: AlgorithmName): LimiterOptions {
  return algorithm === 'token-bucket' || algorithm === 'gcra'
    ? { algorithm, burst: 5, refillPerSecond: 5 / 3600 }
    : { algorithm, limit: 5, windowMs: '1h' };
}

async function redisNowMs(): Promise<number> {
  const [seconds, micros] = await client.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

/** One control decision on the real clock and one on the shifted clock per shift, in order, on fresh subjects. */
async function pairedRun(algorithm: AlgorithmName, run: number) {
  const store = new RedisStore({ client, timeoutMs: 5_000 });
  const limiter = createLimiter({ ...options(algorithm), store, prefix: `app-clock-${algorithm}`, blockCacheSize: 0, failMode: 'closed' });
  const from = await redisNowMs();
  const steps: { control: Decision; shifted: Decision; maxElapsed: number }[] = [];
  let maxElapsed = 0;
  for (const shift of SHIFTS) {
    // Control subject on the real clock.
    jest.restoreAllMocks();
    const before = realDateNow();
    const control = await limiter.consume(`control-${run}`);
    // Same request, same moment (to the ms), application clock moved: every read of it is the
    // real clock plus the shift, bracketed by real reads around it.
    shiftAppClock(shift);
    const [lowDate, date, highDate] = [realDateNow(), Date.now(), realDateNow()];
    const [lowPerf, perf, highPerf] = [realPerformanceNow(), performance.now(), realPerformanceNow()];
    expect({ shift, date: date - shift >= lowDate && date - shift <= highDate, perf: perf - shift >= lowPerf && perf - shift <= highPerf }).toEqual({ shift, date: true, perf: true });
    const shifted = await limiter.consume(`shifted-${run}`);
    maxElapsed = Math.max(maxElapsed, realDateNow() - before);
    steps.push({ control, shifted, maxElapsed });
  }
  jest.restoreAllMocks();
  // The table below assumes one window: fixed-window and sliding-window-counter restart at each hour of Redis TIME.
  const to = await redisNowMs();
  return { steps, oneHour: Math.floor(from / HOUR) === Math.floor(to / HOUR) };
}

it.each(ALGORITHMS)('%s: decisions under a shifted application clock equal those under the real one', async (algorithm) => {
  const pick = (d: Decision) => ({ allowed: d.allowed, remaining: d.remaining, reason: d.reason });
  let run = await pairedRun(algorithm, 0);
  // An hour of Redis TIME turned during the run: run again on fresh subjects (the next turn is an hour away).
  if (!run.oneHour) run = await pairedRun(algorithm, 1);
  expect(run.oneHour).toBe(true);

  run.steps.forEach(({ control, shifted, maxElapsed }, i) => {
    const want = { allowed: i < 5, remaining: Math.max(0, 4 - i), reason: i < 5 ? 'allowed' : 'limited' };
    expect({ i, shift: SHIFTS[i], ...pick(control) }).toEqual({ i, shift: SHIFTS[i], ...want });
    expect({ i, shift: SHIFTS[i], ...pick(shifted) }).toEqual({ i, shift: SHIFTS[i], ...want });
    // Times differ only by the real ms between paired calls (now and when the state was written:
    // at most twice the largest gap), never by hours.
    expect(Math.abs((shifted.resetMs ?? 0) - (control.resetMs ?? 0))).toBeLessThanOrEqual(2 * maxElapsed + 2);
    expect(Math.abs(shifted.retryAfterMs - control.retryAfterMs)).toBeLessThanOrEqual(2 * maxElapsed + 2);
  });
});

it('fixed-window resets at the end of the hour by Redis TIME, whatever the application clock says', async () => {
  const store = new RedisStore({ client, timeoutMs: 5_000 });
  const limiter = createLimiter({ algorithm: 'fixed-window', limit: 5, windowMs: '1h', store, prefix: 'app-clock-reset', blockCacheSize: 0, failMode: 'closed' });
  let checked = 0;
  for (const shift of SHIFTS) {
    shiftAppClock(shift);
    const from = await redisNowMs();
    const d = await limiter.peek('s');
    const to = await redisNowMs();
    jest.restoreAllMocks();
    if (Math.floor(from / HOUR) !== Math.floor(to / HOUR)) continue; // an hour turned during the call
    const end = (Math.floor(from / HOUR) + 1) * HOUR;
    expect({ shift, resetMs: d.resetMs, low: end - to, high: end - from, inRange: d.resetMs! >= end - to && d.resetMs! <= end - from }).toMatchObject({ inRange: true });
    checked++;
  }
  expect(checked).toBeGreaterThanOrEqual(SHIFTS.length - 1);
});
