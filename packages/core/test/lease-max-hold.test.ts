// The cap on lease renewal (`concurrency.maxHoldMs`), on a real Redis: a request that never ends (a hung handler) stops being renewed and its slot frees itself.
import { createLimiter, RedisStore } from '../src';
import { leasesHeld, pollUntil, startRedis, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';

let redis: RedisServer;
let client: Redis;
beforeAll(async () => {
  redis = await startRedis();
  client = redis.client({ autoResendUnfulfilledCommands: false });
});
afterAll(async () => {
  client.disconnect();
  await redis.stop();
});

/** Leases held now under `prefix` (members whose expiry is after Redis TIME). */
const held = (prefix: string): Promise<number> => leasesHeld(client, `${prefix}:*:concurrency.cc`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const LEASE_MS = 2_000;
const MAX_HOLD_MS = 6_000;

it('renews a running lease past leaseMs, stops at maxHoldMs, and a hung request frees its slot by itself; a released one is gone at once', async () => {
  const prefix = `hold-${Math.random().toString(36).slice(2, 8)}`;
  // 5 s per store call: a late answer on a loaded 2-core machine must not turn into a fail-open admission.
  const warned: string[] = [];
  const logger = { warn: (line: string) => void warned.push(line), error() {} };
  const limiter = createLimiter({ store: new RedisStore({ client, timeoutMs: 5_000 }), prefix, logger, failMode: 'closed', limit: 1000, concurrency: { limit: 2, leaseMs: LEASE_MS, maxHoldMs: MAX_HOLD_MS } });
  const hung = await limiter.consume('caller');
  const started = performance.now();
  expect(hung.allowed).toBe(true);
  expect(hung.lease).toBeDefined();
  const finished = await limiter.consume('caller');
  expect(finished.lease).toBeDefined();
  expect(await held(prefix)).toBe(2);
  expect(await finished.lease!.release()).toBe(true);
  expect(await held(prefix)).toBe(1);

  expect(hung.lease!.capped).toBe(false);
  // Past two leases' length the hung one is still held: renewal keeps a long request's slot.
  // (It is no longer renewed from maxHoldMs - leaseMs on: its last renewal runs out at maxHoldMs.)
  await sleep(2 * LEASE_MS + 200);
  expect(await held(prefix)).toBe(1);
  expect((await limiter.consume('caller', { cost: 2 })).allowed).toBe(false);

  // Then renewal stops, and the store frees the slot within maxHoldMs of the admission.
  await pollUntil(async () => ((await held(prefix)) === 0 ? true : undefined), { timeoutMs: MAX_HOLD_MS + 10_000, intervalMs: 50, what: 'the hung lease gone' });
  const freedAfterMs = Math.round(performance.now() - started);
  console.log(`lease max hold: a never-released lease (leaseMs ${LEASE_MS}, maxHoldMs ${MAX_HOLD_MS}) freed ${freedAfterMs} ms after admission`);
  expect(hung.lease!.capped).toBe(true);
  // Said once in the log, naming the option; the released lease (never capped) said nothing.
  expect(warned).toHaveLength(1);
  expect(warned[0]).toMatch(/FG_LEASE_MAX_HOLD: a request held its in-flight slot \(policy 'concurrency'\) for concurrency.maxHoldMs \(6000 ms\)/);
  // Renewed until near the cap (its last renewal at most one renewal period, leaseMs / 3, before maxHoldMs - leaseMs, more if
  // this loaded machine ran the timer late: a lease's length is tolerated), and not held on past the cap: the bound is
  // maxHoldMs; the slack above it is the poll and this machine's noise.
  expect(freedAfterMs).toBeGreaterThanOrEqual(MAX_HOLD_MS - LEASE_MS);
  expect(freedAfterMs).toBeLessThan(MAX_HOLD_MS + 2_000);
  // The full limit is there again; the request's late end releases nothing that another holds.
  const next = await limiter.consume('caller', { cost: 2 });
  expect(next.allowed).toBe(true);
  expect(await hung.lease!.release()).toBe(true);
  expect(await held(prefix)).toBe(2);
  expect(await next.lease!.release()).toBe(true);
  expect(await held(prefix)).toBe(0);
}, 40_000);

it('validates maxHoldMs at construction: a duration from leaseMs to 24 h, named in the error', () => {
  expect(() => createLimiter({ limit: 10, concurrency: { limit: 1, leaseMs: '10s', maxHoldMs: '5s' } })).toThrow(/`concurrency.maxHoldMs`: got "5s".*10000 to 86400000/);
  expect(() => createLimiter({ limit: 10, concurrency: { limit: 1, maxHoldMs: '2d' } })).toThrow(/`concurrency.maxHoldMs`/);
  expect(() => createLimiter({ limit: 10, concurrency: { limit: 1, maxHoldMs: -1 } })).toThrow(/`concurrency.maxHoldMs`/);
  expect(() => createLimiter({ limit: 10, concurrency: { limit: 1, maxHold: '1m' } as never })).toThrow(/maxHold.*did you mean `?maxHoldMs/);
  expect(() => createLimiter({ limit: 10, concurrency: { limit: 1, leaseMs: '1m', maxHoldMs: '1h' } })).not.toThrow();
});
