// Coalescing in RedisStore: requests for one subject sent together in one script call decide exactly as if sent one by one.
// 'turn' (the default) groups the requests of one event-loop turn; 'in-flight' also holds them behind a call in flight.
import { whilePaused } from '@floodgate/testing';
import { ALGORITHMS, createLimiter, RedisStore, subjectKey, type CoalesceMode, type Decision } from '../src';
import { serverWithClient } from './support/redis-clients';

const redis = serverWithClient();
const rnd = () => `co-${Math.random().toString(36).slice(2, 10)}`;
const quiet = { warn: () => {}, error: () => {} };

async function burst(coalesce: CoalesceMode, algorithm: (typeof ALGORITHMS)[number], n: number, costs: (i: number) => number) {
  const prefix = rnd();
  const limiter = createLimiter({
    store: new RedisStore({ client: redis.client, coalesce, timeoutMs: 10_000 }),
    prefix,
    algorithm,
    limit: 50,
    windowMs: '1h',
    refillPerSecond: algorithm === 'token-bucket' || algorithm === 'gcra' ? 1 / 3600 : undefined,
    blockCacheSize: 0,
    logger: quiet,
  });
  await redis.server.resetStats();
  const startedAt = Date.now();
  const decisions = await Promise.all(Array.from({ length: n }, (_, i) => limiter.consume('hot', { cost: costs(i) })));
  const stats = await redis.server.commandStats();
  // The state the burst left: when each key expires (by this clock), keyed by what follows the prefix.
  const keys = await redis.client.keys(`${prefix}:*`);
  const readFrom = Date.now();
  const ttls = await Promise.all(keys.map((k) => redis.client.pttl(k)));
  const endedAt = Date.now();
  // Read at r in [readFrom, endedAt], a key expiring at E has PTTL E - r: so endedAt + PTTL is E,
  // late by at most the read's few ms. Every write happened between startedAt and readFrom.
  const expiries = Object.fromEntries(keys.map((k, i) => [k.slice(prefix.length), ttls[i] < 0 ? ttls[i] : endedAt + ttls[i]]));
  return { decisions, scripts: (stats.evalsha ?? 0) + (stats.eval ?? 0), expiries, startedAt, endedAt };
}

const summary = (ds: Decision[]) => ds.map((d) => `${d.allowed ? 'A' : 'D'}${d.remaining}`);

describe.each(ALGORITHMS)('%s', (algorithm) => {
  it('200 concurrent requests on one subject: exactly the limit admitted, in far fewer script calls, each with its own figures', async () => {
    const { decisions, scripts } = await burst('in-flight', algorithm, 200, () => 1);
    const admitted = decisions.filter((d) => d.allowed);
    expect(admitted).toHaveLength(50);
    expect(decisions.every((d) => d.reason === 'allowed' || d.reason === 'limited')).toBe(true);
    // Each admitted request saw the one before it: remaining counts down 49..0 in arrival order.
    expect(admitted.map((d) => d.remaining)).toEqual(Array.from({ length: 50 }, (_, i) => 49 - i));
    expect(scripts).toBeLessThan(20);
  });

  it('mixed costs: the coalesced answers equal the one-by-one answers, request for request', async () => {
    const costs = (i: number) => [1, 3, 0, 7, 2, 5][i % 6];
    const together = await burst('in-flight', algorithm, 60, costs);
    const turn = await burst('turn', algorithm, 60, costs);
    const apart = await burst(false, algorithm, 60, costs);
    expect(apart.scripts).toBe(60);
    expect(together.scripts).toBeLessThan(60);
    expect(turn.scripts).toBe(1); // all 60 were made in one turn: one call
    expect(summary(together.decisions)).toEqual(summary(apart.decisions));
    expect(summary(turn.decisions)).toEqual(summary(apart.decisions));
    // Written once at the end of the call, the state keeps the expiry one-by-one writes leave: the
    // same keys, each expiring when the one-by-one run's does, give or take the time between the two
    // runs (a window-aligned expiry is the same instant; a lifetime counted from the write moves with it).
    const keys = Object.keys(apart.expiries).sort();
    expect(keys.length).toBeGreaterThan(0);
    expect(Object.keys(turn.expiries).sort()).toEqual(keys);
    const tolerance = apart.endedAt - turn.startedAt + 1;
    for (const key of keys) {
      const [t, a] = [turn.expiries[key], apart.expiries[key]];
      expect({ key, expires: t > 0 && a > 0, apart: Math.abs(t - a) <= tolerance ? 'within the runs' : `${t - a} ms off` }).toEqual({ key, expires: true, apart: 'within the runs' });
    }
  });

  it("'turn': 200 requests made in one turn go in calls of at most 64, each request with its own figures", async () => {
    const { decisions, scripts } = await burst('turn', algorithm, 200, () => 1);
    expect(scripts).toBe(4); // 64 + 64 + 64 + 8
    const admitted = decisions.filter((d) => d.allowed);
    expect(admitted.map((d) => d.remaining)).toEqual(Array.from({ length: 50 }, (_, i) => 49 - i));
    expect(decisions.slice(50).every((d) => !d.allowed && d.reason === 'limited')).toBe(true);
  });
});

it('requests queued behind a call to a hung Redis are failed at once, never sent, and nothing counts twice', async () => {
  const prefix = rnd();
  const limiter = createLimiter({
    store: new RedisStore({ client: redis.client, timeoutMs: 150, coalesce: 'in-flight' }),
    prefix,
    algorithm: 'fixed-window',
    limit: 1_000,
    windowMs: '10m',
    logger: quiet,
  });
  expect((await limiter.consume('victim')).reason).toBe('allowed');
  await redis.server.resetStats();
  const t0 = performance.now();
  const decisions = await whilePaused(redis.server, () => Promise.all(Array.from({ length: 20 }, () => limiter.consume('victim'))));
  const waited = performance.now() - t0;
  expect(decisions.every((d) => d.reason === 'fail-local')).toBe(true);
  expect(waited).toBeLessThan(5_000); // bounded by the timeout, not by the queue (loose: a loaded machine)
  const stats = await redis.server.commandStats();
  expect(stats.evalsha).toBe(1); // only the call in flight reached Redis
  const [count] = await redis.client.hmget(`${subjectKey(prefix, '', 'victim')}:default.fw`, 'c');
  expect(Number(count)).toBe(2); // the first request and the one that ran after the resume
});

describe("'turn' (the default)", () => {
  const limiterOn = (store: RedisStore) =>
    createLimiter({ store, prefix: rnd(), algorithm: 'fixed-window', limit: 1_000, windowMs: '1h', blockCacheSize: 0, logger: quiet });

  it('is the default, and a request awaited before the next is made goes alone', async () => {
    const limiter = limiterOn(new RedisStore({ client: redis.client, timeoutMs: 30_000 }));
    await redis.server.resetStats();
    for (let i = 0; i < 5; i++) expect((await limiter.consume('solo')).remaining).toBe(999 - i);
    expect((await redis.server.commandStats()).evalsha).toBe(5);
  });

  it('one call per turn: 3 subjects x 10 requests -> 1 call holding the 3 subjects, every subject counted exactly', async () => {
    const limiter = limiterOn(new RedisStore({ client: redis.client, timeoutMs: 30_000 }));
    await redis.server.resetStats();
    const decisions = await Promise.all(Array.from({ length: 30 }, (_, i) => limiter.consume(`s${i % 3}`)));
    expect((await redis.server.commandStats()).evalsha).toBe(1);
    for (let s = 0; s < 3; s++) {
      const mine = decisions.filter((_, i) => i % 3 === s).map((d) => d.remaining);
      expect(mine).toEqual([999, 998, 997, 996, 995, 994, 993, 992, 991, 990]);
    }
  });

  it('requests share a call when their mode matches: a subject\'s requests one group, other subjects and scopes other groups of the same call', async () => {
    const limiter = limiterOn(new RedisStore({ client: redis.client, timeoutMs: 30_000 }));
    await redis.server.resetStats();
    const [a, b, p, c] = await Promise.all([
      limiter.consume('x', { cost: 5 }),
      limiter.consume('x', { cost: 2 }),
      limiter.peek('x', { cost: 1 }),
      limiter.consume('x', { scope: 'other' }),
    ]);
    expect([a.remaining, b.remaining, c.remaining]).toEqual([995, 993, 999]);
    expect(p.allowed).toBe(true);
    expect((await redis.server.commandStats()).evalsha).toBe(2); // consume: x (2 requests) and x in 'other'; peek: x
  });

  it('100 subjects in one turn: 2 calls (64 requests at most a call), each subject decided exactly on its own', async () => {
    const limiter = createLimiter({ store: new RedisStore({ client: redis.client, timeoutMs: 30_000 }), prefix: rnd(), algorithm: 'sliding-window-counter', limit: 3, windowMs: '1h', blockCacheSize: 0, logger: quiet });
    await redis.server.resetStats();
    // Every subject gets 4 requests in one turn against a limit of 3: 3 admitted, 1 denied, in order.
    const decisions = await Promise.all(Array.from({ length: 400 }, (_, i) => limiter.consume(`m${i % 100}`)));
    // 400 requests, 64 a call at most, whole subjects (4 requests each) per call: 16 subjects a call, 7 calls.
    expect((await redis.server.commandStats()).evalsha).toBe(7);
    for (let s = 0; s < 100; s++) {
      const mine = decisions.filter((_, i) => i % 100 === s).map((d) => `${d.allowed ? 'A' : 'D'}${d.remaining}`);
      expect({ s, mine }).toEqual({ s, mine: ['A2', 'A1', 'A0', 'D0'] });
    }
  });

  it("subjects of limiters with other limits (and a lock-out) share the call, each decided by its own limits ('=' groups)", async () => {
    const store = new RedisStore({ client: redis.client, timeoutMs: 30_000 });
    const make = (limit: number, extra = {}) => createLimiter({ store, prefix: rnd(), algorithm: 'fixed-window', limit, windowMs: '1h', blockCacheSize: 0, logger: quiet, ...extra });
    const [a, b, locked] = [make(3), make(5), make(4, { lockout: { after: 2, baseMs: 60_000 } })];
    await redis.server.resetStats();
    // In one turn, groups in this order: a x, a y (the limits once, then '='), b z, b w, locked u,
    // locked v (a lock-out's group sends its limits), a t (after b's: its limits again).
    const subjects = [[a, 'x'], [a, 'y'], [b, 'z'], [b, 'w'], [locked, 'u'], [locked, 'v'], [a, 't']] as const;
    const decisions = await Promise.all(subjects.flatMap(([limiter, s]) => Array.from({ length: 6 }, () => limiter.consume(s))));
    expect((await redis.server.commandStats()).evalsha).toBe(1);
    const seen = subjects.map(([, s], i) => `${s}:${decisions.slice(i * 6, i * 6 + 6).map((d) => (d.allowed ? 'A' : 'D') + d.remaining).join(' ')}`);
    expect(seen).toEqual([
      'x:A2 A1 A0 D0 D0 D0',
      'y:A2 A1 A0 D0 D0 D0',
      'z:A4 A3 A2 A1 A0 D0',
      'w:A4 A3 A2 A1 A0 D0',
      'u:A3 A2 A1 A0 D0 D0',
      'v:A3 A2 A1 A0 D0 D0',
      't:A2 A1 A0 D0 D0 D0',
    ]);
    // The lock-out counted its strikes: two denials each, so u and v are locked now.
    expect((await locked.consume('u')).reason).toBe('locked');
  });

  it('a call of several subjects fails or times out for each of its requests alike, and nothing is counted twice', async () => {
    const prefix = rnd();
    const limiter = createLimiter({ store: new RedisStore({ client: redis.client, timeoutMs: 150 }), prefix, algorithm: 'fixed-window', limit: 10, windowMs: '10m', failMode: 'open', logger: quiet });
    const decisions = await whilePaused(redis.server, () => Promise.all(Array.from({ length: 8 }, (_, i) => limiter.consume(`p${i}`))));
    expect(decisions.every((d) => d.reason === 'fail-open')).toBe(true);
    // The call ran once Redis resumed: each subject counted once, never resent.
    for (let i = 0; i < 8; i++) {
      const [count] = await redis.client.hmget(`${subjectKey(prefix, '', `p${i}`)}:default.fw`, 'c');
      expect({ i, count: Number(count) }).toEqual({ i, count: 1 });
    }
  });

  it('rejects an unknown mode at construction, naming the valid ones', () => {
    expect(() => new RedisStore({ client: redis.client, coalesce: true as unknown as CoalesceMode })).toThrow(/coalesce.*'turn'.*'in-flight'.*false/);
  });
});
