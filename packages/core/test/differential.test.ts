// Differential test: seeded random sequences (consume, peek, refund) run on MemoryStore and RedisStore side by side must decide identically, step by step.
import { startRedis, type RedisServer, prng } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import { ALGORITHMS, MemoryStore, RedisStore } from '../src';
import { resolveLimiterOptions } from '../src/engine/options';
import type { LimiterOptions, StoreLimit, StoreRequest, StoreResult } from '../src';
import { FakeClock } from './conformance/fake-clock';

const SEED = Number(process.env.FLOODGATE_DIFF_SEED ?? 0x5eed_2024);
const STEPS = Number(process.env.FLOODGATE_DIFF_STEPS ?? 3000);

interface Profile {
  name: string;
  options: LimiterOptions;
}

const PROFILES: Profile[] = [
  { name: 'fw', options: { algorithm: 'fixed-window', limit: 5, windowMs: 1000 } },
  { name: 'fw-odd', options: { algorithm: 'fixed-window', limit: 3, windowMs: 777 } },
  { name: 'swl', options: { algorithm: 'sliding-window-log', limit: 4, windowMs: 1500 } },
  { name: 'swl-odd', options: { algorithm: 'sliding-window-log', limit: 7, windowMs: 333 } },
  { name: 'swc', options: { algorithm: 'sliding-window-counter', limit: 6, windowMs: 1000 } },
  { name: 'swc-odd', options: { algorithm: 'sliding-window-counter', limit: 3, windowMs: 777 } },
  { name: 'tb', options: { algorithm: 'token-bucket', burst: 5, refillPerSecond: 3 } },
  { name: 'tb-slow', options: { algorithm: 'token-bucket', burst: 3, refillPerSecond: 0.7 } },
  // Lock-out: strikes, doubling locks and forgetting, read and written in the same script call.
  { name: 'fw-lock', options: { algorithm: 'fixed-window', limit: 3, windowMs: 500, lockout: { after: 2, baseMs: 50, maxMs: 900, forgetMs: 3000 } } },
  { name: 'swl-lock', options: { algorithm: 'sliding-window-log', limit: 4, windowMs: 700, lockout: { after: 4, baseMs: 333, maxMs: 5000, forgetMs: 1000 } } },
  { name: 'gcra', options: { algorithm: 'gcra', burst: 4, refillPerSecond: 7.5 } },
  { name: 'gcra-frac', options: { algorithm: 'gcra', burst: 6, refillPerSecond: 1000 / 60 } },
  // High rates: an emission interval of 1.2 us (50,000,000/min) and of 1 us, TATs far below a ms.
  { name: 'gcra-50m-min', options: { algorithm: 'gcra', burst: 50, refillPerSecond: 50_000_000 / 60 } },
  { name: 'gcra-1e6', options: { algorithm: 'gcra', burst: 5_000, refillPerSecond: 1_000_000 } },
  {
    name: 'multi-same',
    options: { limits: [{ algorithm: 'fixed-window', limit: 3, windowMs: 1000 }, { algorithm: 'fixed-window', limit: 10, windowMs: 60_000 }] },
  },
  {
    name: 'multi-a',
    options: {
      limits: [
        { algorithm: 'sliding-window-counter', limit: 10, windowMs: 1000 },
        { algorithm: 'fixed-window', limit: 30, windowMs: 10_000 },
        { algorithm: 'sliding-window-log', limit: 3, windowMs: 300 },
      ],
    },
  },
  {
    name: 'multi-b',
    options: { limits: [{ algorithm: 'token-bucket', burst: 5, refillPerSecond: 2 }, { algorithm: 'gcra', burst: 8, refillPerSecond: 1 }] },
  },
  {
    name: 'multi-all',
    options: {
      limits: [
        { algorithm: 'fixed-window', limit: 8, windowMs: 2000 },
        { algorithm: 'sliding-window-log', limit: 6, windowMs: 1000 },
        { algorithm: 'sliding-window-counter', limit: 5, windowMs: 700 },
        { algorithm: 'token-bucket', burst: 4, refillPerSecond: 3.3 },
        { algorithm: 'gcra', burst: 7, refillPerSecond: 2.5 },
      ],
    },
  },
];

const resolved = PROFILES.map((p) => {
  const r = resolveLimiterOptions(p.options);
  return { name: p.name, limits: r.limits.map((l) => l.store), suffixes: r.limits.map((l) => l.keySuffix), maxCost: r.maxCost, lockout: r.lockout };
});

/** The overall wait of a denial: the slowest denying limit; undefined when some limit can never admit. */
function overallRetry(result: StoreResult): number | undefined {
  let retry = 0;
  for (const r of result.results) {
    if (r.allowed) continue;
    if (r.retryAfterMs < 0) return undefined;
    retry = Math.max(retry, r.retryAfterMs);
  }
  return retry;
}

/**
 * The real client, with every script call wrapped in MULTI: script, PTTL of its keys, PERSIST of
 * its keys. Redis expires keys in real time while the scripts run on the fake clock, which jumps
 * hours in a few real ms and stands still for many; without PERSIST a key could expire (real time)
 * while its state still matters (fake time). PTTL, read atomically after the script, is the TTL the
 * script set, compared with the twin's. Nothing else is touched: the script runs as in production.
 */
function persistingClient(raw: Redis, lastTtls: Map<string, number>): Redis {
  const run = async (command: 'evalsha' | 'eval', script: string, numKeys: number, rest: (string | number)[]) => {
    const keys = rest.slice(0, numKeys).map(String);
    const multi = raw.multi();
    multi[command](script, numKeys, ...rest);
    for (const key of keys) multi.pttl(key);
    for (const key of keys) multi.persist(key);
    const replies = (await multi.exec()) ?? [];
    const [error, reply] = replies[0];
    if (error) throw error; // NOSCRIPT included: RedisStore falls back to EVAL, through here again
    keys.forEach((key, i) => lastTtls.set(key, replies[1 + i][1] as number));
    return reply;
  };
  return {
    get status() {
      return raw.status;
    },
    evalsha: (sha: string, numKeys: number, ...rest: (string | number)[]) => run('evalsha', sha, numKeys, rest),
    eval: (source: string, numKeys: number, ...rest: (string | number)[]) => run('eval', source, numKeys, rest),
    del: (...keys: string[]) => raw.del(...keys),
  } as unknown as Redis;
}

interface MemoryEntry {
  state: unknown;
  expiresAt: number;
}

/** MemoryStore's entry for a key (its protected share, else its private LRU, read without touching recency): to compare TTLs. */
function memoryEntry(store: MemoryStore, key: string): MemoryEntry | undefined {
  const { entries, held } = store as unknown as { entries?: { peek(key: string): MemoryEntry | undefined }; held?: { get(key: string): { entry: MemoryEntry } | undefined } };
  if (!entries || typeof entries.peek !== 'function' || !held || typeof held.get !== 'function') throw new Error('MemoryStore no longer keeps `entries` and `held`: update this test');
  return held.get(key)?.entry ?? entries.peek(key);
}

let server: RedisServer;
let raw: Redis;

beforeAll(async () => {
  server = await startRedis();
  raw = server.client({ autoResendUnfulfilledCommands: false });
  await raw.ping();
}, 30_000);

afterAll(async () => {
  raw?.disconnect();
  await server?.stop();
});

it(`MemoryStore and RedisStore decide identically over ${STEPS} random steps (seed ${SEED})`, async () => {
  const rnd = prng(SEED);
  const clock = new FakeClock(1_699_999_200_000 + 4321);
  const memory = new MemoryStore({ clock: clock.now });
  const lastTtls = new Map<string, number>();
  const redis = new RedisStore({ client: persistingClient(raw, lastTtls), timeoutMs: 10_000, UNSAFE_testClock: clock.now });
  const run = Math.random().toString(36).slice(2, 8);
  const history: string[] = [];
  const stats = { lockoutSteps: 0, locked: 0, consume: 0, peek: 0, refund: 0, refundUnmatched: 0, refundOver: 0, allowed: 0, denied: 0, never: 0, probes: 0, ttlChecks: 0, ttlKept: 0, hourJumps: 0, zeroCost: 0, aboveLimit: 0 };
  // Each subject's admitted consumes (their `at` and cost), for refund steps to name.
  const charges = new Map<string, { at: number; cost: number }[]>();
  // Per key, the expiry (fake-clock ms) its last PEXPIRE set, as the twin had it then.
  const setExpiry = new Map<string, number>();
  const deniedBy: Record<string, number> = {};

  const both = async (request: StoreRequest, what: string) => {
    // The lock key too: its state and TTL are compared like the limits'.
    const keys = request.lockout ? [...request.keys, request.lockout.key] : request.keys;
    // A snapshot, not the entry: an admission may rewrite an entry in place (MemoryStore's one-limit
    // path), its state's fields too (a twin's assign): the state is compared by value as well.
    const before = keys.map((key) => {
      const entry = memoryEntry(memory, key);
      return entry && { state: entry.state, value: JSON.stringify(entry.state), expiresAt: entry.expiresAt };
    });
    const expected = memory.evaluateSync(request);
    lastTtls.clear();
    const sent = performance.now();
    const actual = await redis.evaluate(request);
    // PEXPIRE and PTTL both ran within this round trip: the TTL read can trail by at most its length.
    const slack = Math.ceil(performance.now() - sent) + 1;
    history.push(`${what} -> ${JSON.stringify(expected)}`);
    if (history.length > 25) history.shift();
    if (JSON.stringify(actual) !== JSON.stringify(expected)) {
      throw new Error(`stores disagree (seed ${SEED}):\n  memory ${JSON.stringify(expected)}\n  redis  ${JSON.stringify(actual)}\nlast steps:\n${history.join('\n')}`);
    }
    // The TTL the script set must be the twin's: a key rewritten in memory got its TTL from the
    // script (PTTL in the same MULTI: equal, or less by the real ms that passed in between), or
    // kept the one the script set before (-1, persisted since: a window-aligned state rewritten in
    // its window, whose expiry is the same instant), which must then be the twin's new expiry; a
    // key not rewritten got none (-1: persisted before; -2: absent).
    keys.forEach((key, i) => {
      const after = memoryEntry(memory, key);
      const pttl = lastTtls.get(key);
      if (after !== undefined && (before[i] === undefined || after.state !== before[i]!.state || JSON.stringify(after.state) !== before[i]!.value || after.expiresAt !== before[i]!.expiresAt)) {
        const want = after.expiresAt - clock.now();
        stats.ttlChecks++;
        if (pttl === -1 && setExpiry.get(key) === after.expiresAt) {
          stats.ttlKept++;
        } else if (!(pttl !== undefined && pttl <= want && pttl >= want - slack)) {
          throw new Error(`TTL of ${key}: script set ${pttl} ms, twin ${want} ms (${after.expiresAt}; the script's last: ${setExpiry.get(key)}), slack ${slack} ms (${what})\n${history.join('\n')}`);
        } else {
          setExpiry.set(key, after.expiresAt);
        }
      } else if (!(pttl === -1 || pttl === -2)) {
        throw new Error(`TTL of ${key}: script set ${pttl} ms, twin wrote nothing (${what})\n${history.join('\n')}`);
      }
    });
    return expected;
  };

  let episode = { p: resolved[0], subject: 1 };
  let episodeLeft = 0;
  for (let step = 0; step < STEPS; step++) {
    const roll = rnd.next();
    const advance =
      roll < 0.4 ? 0 : roll < 0.7 ? rnd.int(1, 20) : roll < 0.92 ? rnd.int(1, 500) : roll < 0.985 ? rnd.int(1, 5000) : rnd.int(1, 3 * 3_600_000);
    if (advance > 20_000) stats.hourJumps++;
    clock.advance(advance);
    // Episodes on one key put it under pressure; a stray step on another key interleaves them.
    if (episodeLeft-- <= 0) {
      episode = { p: rnd.pick(resolved), subject: rnd.int(1, 2) };
      episodeLeft = rnd.int(5, 40);
    }
    const { p, subject: n } = rnd.chance(0.1) ? { p: rnd.pick(resolved), subject: rnd.int(1, 2) } : episode;
    const subject = `${p.name}-${n}`;
    const keys = p.suffixes.map((suffix) => `diff-${run}:{${subject}}:${suffix}`);
    const c = rnd.next();
    const cost =
      c < 0.08 ? 0 : c < 0.52 ? 1 : c < 0.92 ? rnd.int(Math.min(2, p.maxCost), p.maxCost) : rnd.int(p.maxCost + 1, p.maxCost + 3);
    const past = charges.get(subject) ?? [];
    if (rnd.chance(0.15)) {
      // A refund: of a recent charge (sometimes of more than it drew, or one from long ago), or
      // of one that never happened (a ms nothing was charged at, a subject never charged).
      stats.refund++;
      const named = past.length > 0 && rnd.chance(0.85) ? past[past.length - 1 - rnd.int(0, Math.min(past.length - 1, 5))] : undefined;
      if (!named) stats.refundUnmatched++;
      const at = named ? named.at : clock.now() - rnd.int(0, 3000);
      const back = named && rnd.chance(0.8) ? named.cost : rnd.int(0, p.maxCost + 2);
      if (named && back > named.cost) stats.refundOver++;
      await both({ keys, limits: p.limits, cost: back, mode: 'refund', at }, `#${step} +${advance}ms ${subject} refund cost ${back} at ${at}`);
      continue;
    }
    const mode = rnd.chance(0.8) ? 'consume' : 'peek';
    stats[mode]++;
    if (cost === 0) stats.zeroCost++;
    if (cost > p.maxCost) stats.aboveLimit++;
    const lockout = p.lockout && { ...p.lockout, key: `diff-${run}:{${subject}}:lock` };
    if (lockout) stats.lockoutSteps++;
    const request: StoreRequest = { keys, limits: p.limits, cost, mode, ...(lockout && { lockout }) };
    const result = await both(request, `#${step} +${advance}ms ${subject} ${mode} cost ${cost}`);
    if (result.lockedMs) {
      stats.locked++;
      continue;
    }
    if (result.allowed) {
      stats.allowed++;
      if (mode === 'consume') charges.set(subject, [...past.slice(-9), { at: result.at, cost }]);
      continue;
    }
    stats.denied++;
    result.results.forEach((r, i) => {
      if (!r.allowed) deniedBy[p.limits[i].algorithm] = (deniedBy[p.limits[i].algorithm] ?? 0) + 1;
    });
    const retry = overallRetry(result);
    if (retry === undefined) {
      stats.never++;
      expect(cost).toBeGreaterThan(p.maxCost);
      continue;
    }
    expect(retry).toBeGreaterThan(0);
    if (!rnd.chance(0.5)) continue;
    // retryAfterMs is exact on both stores: k ms later the wait is retry - k; at retry - 1 still
    // denied; at retry admitted. Peeks only, clock moving forward.
    stats.probes++;
    const peek: StoreRequest = { ...request, mode: 'peek' };
    const k = rnd.int(0, retry - 1);
    clock.advance(k);
    const mid = await both(peek, `#${step} probe +${k}ms of ${retry}`);
    expect({ step, allowed: mid.allowed, retry: overallRetry(mid) }).toEqual({ step, allowed: false, retry: retry - k });
    if (retry - k > 1) {
      clock.advance(retry - k - 1);
      const last = await both(peek, `#${step} probe at retry - 1 = ${retry - 1}`);
      expect({ step, allowed: last.allowed, retry: overallRetry(last) }).toEqual({ step, allowed: false, retry: 1 });
    }
    clock.advance(1);
    const at = await both(peek, `#${step} probe at retry = ${retry}`);
    expect({ step, allowed: at.allowed }).toEqual({ step, allowed: true });
  }
  console.log(`differential (seed ${SEED}): ${JSON.stringify({ steps: STEPS, ...stats, deniedBy })}`);
  // The sequence reached every corner it is meant to.
  expect(stats.allowed).toBeGreaterThan(STEPS / 4);
  expect(stats.denied).toBeGreaterThan(STEPS / 10);
  expect(stats.never).toBeGreaterThan(0);
  expect(stats.zeroCost).toBeGreaterThan(STEPS / 50);
  expect(stats.aboveLimit).toBeGreaterThan(STEPS / 50);
  expect(stats.probes).toBeGreaterThan(STEPS / 40);
  expect(stats.refund).toBeGreaterThan(STEPS / 10);
  expect(stats.locked).toBeGreaterThan(STEPS / 200);
  expect(stats.refundUnmatched).toBeGreaterThan(STEPS / 200);
  expect(stats.refundOver).toBeGreaterThan(STEPS / 400);
  // Window-aligned states rewritten in their window kept the expiry their window's first write set.
  expect(stats.ttlKept).toBeGreaterThan(STEPS / 50);
  for (const algorithm of ALGORITHMS) {
    expect({ algorithm, denials: (deniedBy[algorithm] ?? 0) > 20 }).toEqual({ algorithm, denials: true });
  }
}, 60_000);

it('the profiles cover every algorithm and a set of three or more limits (zero costs and costs above the limit: counted in the run above)', () => {
  const algorithms = new Set(resolved.flatMap((p) => p.limits.map((l: StoreLimit) => l.algorithm)));
  // Every registered algorithm: a new one needs its profiles above.
  expect([...algorithms].sort()).toEqual([...ALGORITHMS].sort());
  expect(resolved.some((p) => p.limits.length >= 3)).toBe(true);
});

/**
 * The path every user runs: RedisStore with no test clock (the scripts read Redis TIME) and no
 * PERSIST (keys expire in Redis, in real time), with real sleeps between steps so that windows
 * roll, tokens refill and keys expire on the production clock. Each request also carries a
 * fixed-window limit of a billion per 365 days, which never denies and whose resetMs is the window's
 * end minus the script's own `now`: so every step tells the exact ms Redis read, and the twin fed
 * that ms must give the very same decision, every field. (The extra limit sends single-algorithm
 * profiles other than fixed-window through the multi-algorithm script, which runs the same
 * algorithm chunks; their own scripts on TIME are held to exact values in app-clock.test.ts.)
 */
it('on Redis TIME, keys expiring for real: RedisStore decides exactly as the twin fed the ms Redis read, every profile', async () => {
  const rnd = prng(SEED ^ 0x7153);
  const redis = new RedisStore({ client: raw, timeoutMs: 10_000 });
  const YEAR = 31_536_000_000;
  const [clockLimit] = resolveLimiterOptions({ algorithm: 'fixed-window', limit: 1_000_000_000, windowMs: YEAR }).limits;
  const redisNow = async () => {
    const [s, us] = await raw.time();
    return Number(s) * 1000 + Math.floor(Number(us) / 1000);
  };
  const run = Math.random().toString(36).slice(2, 8);
  const STEPS_PER_PROFILE = 30;
  const totals = { steps: 0, allowed: 0, denied: 0, refunds: 0 };
  await server.resetStats();

  // Every profile at once, each on its own subject: the run lasts as long as one profile's sleeps.
  await Promise.all(
    resolved.map(async (p, n) => {
      let now = 0;
      const twin = new MemoryStore({ clock: () => now });
      const limits = [...p.limits, clockLimit.store];
      const keys = [...p.suffixes, `clock.${clockLimit.keySuffix}`].map((suffix) => `clock-${run}:{${p.name}-${n}}:${suffix}`);
      let last: { at: number; cost: number } | undefined;
      for (let step = 0; step < STEPS_PER_PROFILE; step++) {
        await new Promise((resolve) => setTimeout(resolve, rnd.chance(0.3) ? 0 : rnd.int(1, 400)));
        const c = rnd.next();
        const cost = c < 0.1 ? 0 : c < 0.6 ? 1 : c < 0.92 ? rnd.int(Math.min(2, p.maxCost), p.maxCost) : p.maxCost + 1;
        // Some steps refund the last admitted consume, named by the `at` Redis replied with.
        const request: StoreRequest =
          last && rnd.chance(0.2)
            ? { keys, limits, cost: last.cost, mode: 'refund', at: last.at }
            : { keys, limits, cost, mode: rnd.chance(0.8) ? 'consume' : 'peek', ...(p.lockout && { lockout: { ...p.lockout, key: `clock-${run}:{${p.name}-${n}}:lock` } }) };
        const t1 = await redisNow();
        const actual = await redis.evaluate(request);
        const t2 = await redisNow();
        const clock = actual.results[actual.results.length - 1];
        now = (Math.floor(t1 / YEAR) + 1) * YEAR - clock.resetMs;
        const what = `${p.name} step ${step} cost ${cost} ${request.mode}, TIME ${t1}..${t2}, script's now ${now}`;
        // The script read TIME between the two reads around it: the production clock, not ours.
        if (!(clock.allowed && now >= t1 && now <= t2)) throw new Error(`${what}: the clock limit says ${JSON.stringify(clock)}`);
        // The reply's `at` is that same ms.
        if (actual.at !== now) throw new Error(`${what}: the reply says at ${actual.at}`);
        if (request.mode === 'refund') totals.refunds++;
        else if (request.mode === 'consume' && actual.allowed) last = { at: actual.at, cost: request.cost };
        const expected = twin.evaluateSync(request);
        if (JSON.stringify(actual) !== JSON.stringify(expected)) {
          throw new Error(`${what}:\n  redis ${JSON.stringify(actual)}\n  twin  ${JSON.stringify(expected)}`);
        }
        totals.steps++;
        totals[actual.allowed ? 'allowed' : 'denied']++;
      }
    }),
  );
  const expired = Number(/expired_keys:(\d+)/.exec(await raw.info('stats'))?.[1] ?? 0);
  console.log(`differential on Redis TIME (seed ${SEED}): ${JSON.stringify({ profiles: resolved.length, ...totals, expiredKeysInRedis: expired })}`);
  expect(totals.steps).toBe(resolved.length * STEPS_PER_PROFILE);
  // The sequences reach both outcomes on the production clock, and Redis expired keys on its own.
  expect(totals.allowed).toBeGreaterThan(totals.steps / 4);
  expect(totals.denied).toBeGreaterThan(totals.steps / 10);
  expect(expired).toBeGreaterThan(0);
  expect(totals.refunds).toBeGreaterThan(totals.steps / 20);
}, 60_000);
