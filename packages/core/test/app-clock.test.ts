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

it.each(ALGORITHMS)('%s: decisions under a shifted application clock equal those under the real one', async (algorithm) => {
  const store = new RedisStore({ client, timeoutMs: 5_000 });
  const limiter = createLimiter({ ...options(algorithm), store, prefix: `app-clock-${algorithm}`, blockCacheSize: 0, failMode: 'closed' });
  const pick = (d: Decision) => ({ allowed: d.allowed, remaining: d.remaining, reason: d.reason });

  let maxElapsed = 0;
  for (let i = 0; i < SHIFTS.length; i++) {
    // Control subject on the real clock.
    jest.restoreAllMocks();
    const before = realDateNow();
    const control = await limiter.consume('control');
    // Same request, same moment (to the ms), application clock moved.
    shiftAppClock(SHIFTS[i]);
    expect(Math.abs(Date.now() - realDateNow() - SHIFTS[i])).toBeLessThan(5);
    expect(Math.abs(performance.now() - realPerformanceNow() - SHIFTS[i])).toBeLessThan(5);
    const shifted = await limiter.consume('shifted');
    maxElapsed = Math.max(maxElapsed, realDateNow() - before);

    const want = { allowed: i < 5, remaining: Math.max(0, 4 - i), reason: i < 5 ? 'allowed' : 'limited' };
    expect({ i, shift: SHIFTS[i], ...pick(control) }).toEqual({ i, shift: SHIFTS[i], ...want });
    expect({ i, shift: SHIFTS[i], ...pick(shifted) }).toEqual({ i, shift: SHIFTS[i], ...want });
    // Times differ only by the real ms between paired calls (now and when the state was written:
    // at most twice the largest gap), never by hours.
    expect(Math.abs((shifted.resetMs ?? 0) - (control.resetMs ?? 0))).toBeLessThanOrEqual(2 * maxElapsed + 2);
    expect(Math.abs(shifted.retryAfterMs - control.retryAfterMs)).toBeLessThanOrEqual(2 * maxElapsed + 2);
  }
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
