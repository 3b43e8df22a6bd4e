// The lean scripts (lua/lean.lua) and the one-decision scripts (lua/one.lua): chosen for consume and peek calls of one limit per subject without lock-out or override (one.lua: a consume of one request), and on a real Redis deciding, replying and writing exactly as the full script does, call for call.
import { startRedis, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import { ALGORITHM, type StoreLimit } from '../src/algorithms/registry';
import type { StoreRequest, StoreResult } from '../src';
import { encodeCall, encodeGroups, evalArgs, parseReply, scriptFor, SCRIPTS } from '../src/internal';

// Periods of an hour and more: Redis expires keys by its own clock, so a state the test clock
// keeps alive must outlive the test however slow the machine (the clock below moves 400 s a call at most).
const SLOW = 3_600;
const LIMITS: Record<string, StoreLimit> = {
  'fixed-window': { algorithm: 'fixed-window', capacity: 5, windowMs: 1_000 * SLOW },
  'sliding-window-log': { algorithm: 'sliding-window-log', capacity: 5, windowMs: 1_000 * SLOW },
  'sliding-window-counter': { algorithm: 'sliding-window-counter', capacity: 5, windowMs: 1_000 * SLOW },
  'token-bucket': { algorithm: 'token-bucket', capacity: 5, refillPerSecond: 4 / SLOW },
  gcra: { algorithm: 'gcra', capacity: 5, refillPerSecond: 4 / SLOW },
  concurrency: { algorithm: 'concurrency', capacity: 3, leaseMs: 700 * SLOW },
};

const request = (subject: string, limit: StoreLimit, cost: number, extra: Partial<StoreRequest> = {}): StoreRequest => ({
  keys: [`lean:{${subject}}:a`],
  limits: [limit],
  cost,
  mode: 'consume',
  ...extra,
});

describe('which script a call goes to', () => {
  const limit = LIMITS['sliding-window-counter'];
  const lockout = { after: 3, baseMs: 1_000, maxMs: 60_000, forgetMs: 600_000, key: 'lean:{a}:lock' };
  it('a consume of one request, one limit, a rate or window algorithm: its one-decision script, ARGV capacity, period, the cost unless 1 (and the test clock)', () => {
    const one = encodeCall([request('a', limit, 2)]);
    expect(one.script).toBe(SCRIPTS['sliding-window-counter/one']);
    expect(one.argv).toEqual([5, 1_000 * SLOW, 2]);
    expect(one.keys).toEqual(['lean:{a}:a']);
    expect(encodeCall([request('a', limit, 1)]).argv).toEqual([5, 1_000 * SLOW]);
    expect(encodeCall([request('a', limit, 1)], 7).argv).toEqual([5, 1_000 * SLOW, 1, 7]);
    // A coalesced call of one subject and one request (encodeGroups of one group) too.
    expect(encodeGroups([[request('a', limit, 1)]]).script).toBe(SCRIPTS['sliding-window-counter/one']);
    for (const name of Object.keys(LIMITS)) {
      const script = encodeCall([request('a', LIMITS[name], 1, name === 'concurrency' ? { token: 't' } : {})]).script;
      // A lease's consume carries its token: the lean script.
      expect(script).toBe(SCRIPTS[name === 'concurrency' ? 'concurrency/lean' : (`${name}/one` as keyof typeof SCRIPTS)]);
    }
  });
  it('every one-decision script leaves the write cache, the tables by id and the chunk\'s refund and debit out', () => {
    const ones = Object.entries(SCRIPTS).filter(([name]) => name.endsWith('/one'));
    expect(ones.map(([name]) => name).sort()).toEqual(['fixed-window/one', 'gcra/one', 'sliding-window-counter/one', 'sliding-window-log/one', 'token-bucket/one']);
    for (const [, script] of ones) {
      expect(script.source).not.toMatch(/^local function (refund|debit|release|renew|flush)\(/m);
      expect(script.source.replace(/--.*$/gm, '')).not.toMatch(/CACHE|CHECK|DIRECT|HOLD/);
    }
  });
  it('consume of several requests or subjects, and peek, of one limit per subject: the lean twin of the algorithm script', () => {
    expect(encodeCall([request('a', limit, 1), request('a', limit, 2)], 5).script).toBe(SCRIPTS['sliding-window-counter/lean']);
    expect(encodeCall([request('a', limit, 1, { mode: 'peek' })]).script).toBe(SCRIPTS['sliding-window-counter/lean']);
    expect(encodeGroups([[request('a', limit, 1)], [request('b', limit, 1)]]).script).toBe(SCRIPTS['sliding-window-counter/lean']);
    // A group on the limits of the one before: '+' alone for one request of cost 1, else '=' and its costs.
    // (The same limits: one array, as one limiter's requests share.)
    const id = ALGORITHM['sliding-window-counter'].id;
    const same = { limits: [limit] };
    const groups = [[request('a', limit, 1, same)], [request('b', limit, 1, same)], [request('c', limit, 2, same)], [request('d', limit, 1, same), request('d', limit, 1, same)]];
    expect(encodeGroups(groups).argv).toEqual(['cM', 1, 1, id, 5, 1_000 * SLOW, '+', '=', 2, '=', '1,1']);
  });
  it('a lock-out, an override, two limits or another mode, in any group: the full script', () => {
    const full = SCRIPTS['sliding-window-counter'];
    expect(encodeCall([request('a', limit, 1, { lockout })]).script).toBe(full);
    expect(encodeCall([request('a', limit, 1, { override: { key: 'lean:{a}:o', ceiling: 0 } })]).script).toBe(full);
    expect(encodeCall([request('a', limit, 1, { limits: [limit, limit], keys: ['lean:{a}:a', 'lean:{a}:b'] })]).script).toBe(full);
    expect(encodeCall([request('a', limit, 1, { mode: 'refund', at: 1 })]).script).toBe(full);
    expect(encodeCall([request('a', limit, 1, { mode: 'hold', maxDelayMs: 10 })]).script).toBe(full);
    expect(encodeGroups([[request('a', limit, 1)], [request('b', limit, 1, { lockout: { ...lockout, key: 'lean:{b}:lock' } })]]).script).toBe(full);
  });
  it('every lean script leaves the chunks\' refund, debit, release and renew out, and defines what main.lua has not', () => {
    for (const [name, script] of Object.entries(SCRIPTS)) {
      if (!name.endsWith('/lean')) continue;
      expect(script.source).not.toMatch(/^local function (refund|debit|release|renew)\(/m);
      expect(script.source).toContain('local CHECK = {}');
    }
  });
});

let server: RedisServer;
let client: Redis;

beforeAll(async () => {
  server = await startRedis();
  client = server.client();
  await client.ping();
}, 30_000);

afterAll(async () => {
  client?.disconnect();
  await server?.stop();
});

/** A small deterministic generator (mulberry32): the same sequence every run. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A key's state, whatever its type, and whether it has an expiry (its length runs on Redis's own
 * clock). A state that expires within a minute counts as gone: a cost-0 request can leave one of 1
 * ms (gcra), which Redis may expire between reading the twins; every other state here lives hours.
 */
async function stateOf(key: string): Promise<unknown> {
  // Read in one script: Redis expires nothing while a script runs, so type, TTL and value agree.
  const [type, ttl, value] = (await client.eval(READ_STATE, 1, key)) as [string, number, unknown];
  if (type === 'none' || (ttl >= 0 && ttl < 60_000)) return 'gone';
  return { type, value, expires: ttl > 0 ? true : ttl };
}

const READ_STATE = `local t = redis.call('TYPE', KEYS[1]).ok
local v = false
if t == 'hash' then v = redis.call('HGETALL', KEYS[1])
elseif t == 'zset' then v = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
elseif t == 'string' then v = redis.call('GET', KEYS[1]) end
return { t, redis.call('PTTL', KEYS[1]), v }`;

/** A one-decision call's ARGV with a test clock (capacity, period, cost, clock) as the full script takes the same consume. */
function fullArgv(limit: StoreLimit, sent: (string | number)[]): (string | number)[] {
  return ['cT', sent[2], ALGORITHM[limit.algorithm].id, sent[0], sent[1], sent[3]];
}

describe.each(Object.keys(LIMITS).filter((name) => name !== 'concurrency'))('%s: the one-decision script and the full one, the same consumes on twin keys', (name) => {
  it('give the same answers and leave the same states (300 generated consumes of one request: costs 0 to 6, four subjects, the clock moving by up to 400 s)', async () => {
    const limit = LIMITS[name];
    const next = random(name.length * 104_729);
    const full = scriptFor([limit]);
    let now = 1_700_000_000_000;
    for (let i = 0; i < 300; i++) {
      now += Math.floor(next() * 400 * SLOW);
      const call = encodeCall([request(`${name}-o${Math.floor(next() * 4)}`, limit, Math.floor(next() * 7))], now);
      expect(call.script.name).toBe(`${name}/one`);
      const [, numKeys, key, ...sent] = evalArgs(call, call.script.sha);
      const twin = (key as string).replace('lean:', 'full:');
      const one = await client.eval(call.script.source, numKeys, key, ...sent);
      const reference = await client.eval(full.source, numKeys, twin, ...fullArgv(limit, sent));
      expect(parseReply(one, call)).toEqual(parseReply(reference, { ...call, lean: false }));
      expect(await stateOf(key as string)).toEqual(await stateOf(twin));
    }
  });
  it("a subject's own error (a key of another type, a state that is not a number) is that request's answer, FG_STORE_SCRIPT, as with the full script", async () => {
    const limit = LIMITS[name];
    const now = 1_700_000_000_000;
    const wrongType = name === 'gcra' ? 'hash' : 'string';
    for (const [i, spoil] of [
      ['type', (k: string) => (wrongType === 'hash' ? client.hset(k, 'x', '1') : client.set(k, 'x'))],
      ['state', (k: string) => (name === 'sliding-window-log' ? client.zadd(k, 'NaN', 'x').catch(() => client.set(k, 'x')) : name === 'gcra' ? client.set(k, 'x:y') : client.hset(k, 'w', 'x', 'c', 'x', 'p', 'x', 't', 'x', 'ts', 'x'))],
    ] as const) {
      const call = encodeCall([request(`${name}-bad-${i}`, limit, 1)], now);
      expect(call.script.name).toBe(`${name}/one`);
      const [, numKeys, key, ...sent] = evalArgs(call, call.script.sha);
      const twin = (key as string).replace('lean:', 'full:');
      await spoil(key as string);
      await spoil(twin);
      const [one] = parseReply(await client.eval(call.script.source, numKeys, key, ...sent), call);
      const [reference] = parseReply(await client.eval(full(limit).source, numKeys, twin, ...fullArgv(limit, sent)), { ...call, lean: false });
      expect(reference).toMatchObject({ code: 'FG_STORE_SCRIPT' });
      expect(one).toMatchObject({ code: 'FG_STORE_SCRIPT' });
      expect(await stateOf(key as string)).toEqual(await stateOf(twin));
    }
  });
});

const full = (limit: StoreLimit) => scriptFor([limit]);

describe('the one-decision script on Redis TIME (no test clock)', () => {
  it('counts a cost of 1, which it is not sent, and a cost sent, as the full script does', async () => {
    const limit = LIMITS['sliding-window-counter'];
    const results: unknown[] = [];
    for (const cost of [1, 3, 1, 1]) {
      const call = encodeCall([request('time', limit, cost)]);
      expect(call.argv).toHaveLength(cost === 1 ? 2 : 3);
      const [, numKeys, ...rest] = evalArgs(call, call.script.sha);
      const [result] = parseReply(await client.eval(call.script.source, numKeys, ...rest), call) as StoreResult[];
      results.push([result.allowed, result.results[0].remaining]);
    }
    // Capacity 5 in an hour-long window: 1 (4 left), 3 (1 left), 1 (0 left), then refused.
    expect(results).toEqual([
      [true, 4],
      [true, 1],
      [true, 0],
      [false, 0],
    ]);
    expect(await client.hget('lean:{time}:a', 'c')).toBe('5');
  });
});

describe.each(Object.keys(LIMITS))('%s: the lean script and the full one, the same calls on twin keys', (name) => {
  it('give the same answers and leave the same states (300 generated calls: one subject or several, a subject in two groups, coalesced requests, peeks, costs 0 to 3)', async () => {
    const limit = LIMITS[name];
    const lease = limit.algorithm === 'concurrency';
    const shared = [limit];
    const next = random(name.length * 7919);
    const full = scriptFor([limit]);
    let now = 1_700_000_000_000;
    let token = 0;
    for (let i = 0; i < 300; i++) {
      now += Math.floor(next() * 400 * SLOW);
      const groups: StoreRequest[][] = [];
      const subjects = 1 + Math.floor(next() * 3);
      const mode = next() < 0.15 ? 'peek' : 'consume';
      for (let s = 0; s < subjects; s++) {
        const group: StoreRequest[] = [];
        // Sometimes a subject twice in one call (two limiters on one prefix): the write of one
        // group must reach the next one's read, whether it went straight to Redis or through the cache.
        const subject = Math.floor(next() * 4);
        const requests = 1 + Math.floor(next() * 3);
        for (let r = 0; r < requests; r++) {
          // One limits array for every group, as one limiter's requests share: groups after the first
          // go as '=' and their costs, or '+' alone.
          const extra: Partial<StoreRequest> = lease ? { mode, token: `t${token++}`, limits: shared } : { mode, limits: shared };
          group.push(request(`${name}-s${subject}`, limit, Math.floor(next() * 4), extra));
        }
        groups.push(group);
      }
      const call = encodeGroups(groups, now);
      const one = call.script.name.endsWith('/one');
      expect(call.script.name).toBe(one ? `${full.name.split('/')[0]}/one` : `${full.name}/lean`);
      const [, numKeys, ...rest] = evalArgs(call, call.script.sha);
      const keys = rest.slice(0, numKeys) as string[];
      const sent = rest.slice(numKeys);
      // The one-decision script's ARGV (cost, capacity, period, clock) in the full protocol's form.
      const argv = one ? fullArgv(limit, sent) : sent;
      const twin = keys.map((k) => k.replace('lean:', 'full:'));
      const lean = await client.eval(call.script.source, numKeys, ...keys, ...sent);
      const reference = await client.eval(full.source, numKeys, ...twin, ...argv);
      // The lean reply leaves out allowedAll and lockedMs: the same answers, read each its own way.
      expect(parseReply(lean, call)).toEqual(parseReply(reference, { ...call, lean: false }));
      for (let k = 0; k < keys.length; k++) expect(await stateOf(keys[k])).toEqual(await stateOf(twin[k]));
    }
  });
});
