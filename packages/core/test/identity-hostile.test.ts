// Hostile input: tens of thousands of random header values, IP strings and API keys through identify and a real Redis.
import { runInThisContext } from 'node:vm';
import { prng, startRedis, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import { createLimiter, type Limiter } from '../src/engine/limiter';
import { RedisStore } from '../src/stores/redis/redis-store';
import { createIdentify, type Identify, type Identity, type RequestFacts, type ResolveKey } from '../src/identity';

const SEED = Number(process.env.FG_FUZZ_SEED ?? 0x5eed);
const IDENTIFY_RUNS = 25_000;
const REDIS_RUNS = 15_000;

/** The shared seeded PRNG, so a failing run can be replayed with FG_FUZZ_SEED; int(n) draws from [0, n). */
function rngOf(seed: number) {
  const r = prng(seed);
  return { next: r.next, int: (n: number) => r.int(0, n - 1), pick: r.pick };
}

type Rng = ReturnType<typeof rngOf>;

const NASTY = ['{', '}', ':', '{}', '}{', '::', '%', '%25', '\u0000', '\r\n', '\t', ' ', '"', "'", '\\', '/', '*', '[', ']', ',', ';', '=', 'é', '€', '😀', '\ud800', '\uffff', '\u202e'];

function randomString(rng: Rng, max: number): string {
  const len = rng.int(max + 1);
  // Long values repeat a random chunk: as hostile to a parser, and cheap to make by the thousand.
  if (len > 256) return randomString(rng, 256).padEnd(len, randomString(rng, 64) || 'x');
  let s = '';
  while (s.length < len) {
    const r = rng.next();
    if (r < 0.3) s += rng.pick(NASTY);
    else if (r < 0.6) s += String.fromCharCode(32 + rng.int(95));
    else if (r < 0.8) s += rng.int(0x10000).toString(16);
    else s += String.fromCharCode(rng.int(0x10000));
  }
  return s.slice(0, len);
}

/**
 * Random strings made once and reused: building them char by char for every request costs more
 * than identify itself. Combined with fresh random numbers below, the inputs stay distinct.
 */
interface Pools {
  short: string[];
  medium: string[];
  huge: string[];
}

function makePools(rng: Rng): Pools {
  return {
    short: Array.from({ length: 2_000 }, () => randomString(rng, 20)),
    medium: Array.from({ length: 1_000 }, () => randomString(rng, 200)),
    huge: Array.from({ length: 100 }, () => randomString(rng, 256).padEnd(10_240, randomString(rng, 64) || '{')),
  };
}

function randomIp(rng: Rng, p: Pools): string | undefined {
  const hex = () => rng.int(0x10000).toString(16);
  const octet = () => String(rng.int(300));
  switch (rng.int(14)) {
    case 0: return undefined;
    case 1: return '';
    case 2: return [octet(), octet(), octet(), octet()].join('.');
    case 3: return `::ffff:${[octet(), octet(), octet(), octet()].join('.')}`;
    case 4: return Array.from({ length: 8 }, hex).join(':');
    case 5: return `${hex()}:${hex()}::${hex()}${rng.pick(['', '%eth0', '%25', '%{}:', '%' + rng.pick(p.short)])}`;
    case 6: return `[${hex()}::${hex()}]${rng.pick(['', ':80', ':x', ']'])}`;
    case 7: return Array.from({ length: 1 + rng.int(12) }, hex).join(rng.pick([':', '::', '.', ':::']));
    case 8: return rng.pick(p.short) + hex();
    case 9: return rng.pick(p.huge);
    case 10: return `${octet()}.${octet()}.${octet()}.${octet()}, ${octet()}.1.1.1`;
    case 11: return `0x${hex()}.${rng.int(0o777).toString(8)}.1`;
    case 12: return '1.2.3.4'.repeat(1 + rng.int(30));
    default: return `${rng.pick(['2001:db8', 'fe80', 'FE80', '::', '64:ff9b:'])}::${hex()}:${hex()}`;
  }
}

function randomKey(rng: Rng, p: Pools): string {
  switch (rng.int(6)) {
    case 0: return `known-${rng.int(20)}`;
    case 1: return rng.pick(p.short) + rng.int(1e9) + rng.pick(p.short);
    case 2: return 'k'.repeat(10_240 + rng.int(3));
    case 3: return rng.pick(p.huge) + rng.int(1e6);
    case 4: return `{${rng.pick(p.short)}}:${rng.int(1e6)}:${rng.pick(p.short)}`;
    default: return `plan-${rng.pick(['free', 'pro', 'bad', 'throws', 'odd'])}-${rng.int(50)}`;
  }
}

function randomFacts(rng: Rng, p: Pools): RequestFacts {
  const headers: Record<string, string | string[] | undefined> = {};
  const r = rng.int(8);
  if (r === 0) headers.authorization = `Bearer ${randomKey(rng, p)}`;
  else if (r === 1) headers.authorization = `${rng.pick(['bearer', 'BEARER', 'Basic', 'Bearer\t', 'Bearer  '])} ${randomKey(rng, p)}${rng.pick(['', ' ', ' x', '\t'])}`;
  else if (r === 2) headers['x-api-key'] = randomKey(rng, p);
  else if (r === 3) headers['x-api-key'] = [randomKey(rng, p), randomKey(rng, p)];
  else if (r === 4) headers.authorization = rng.pick(p.medium);
  if (rng.int(10) === 0) headers[rng.pick(p.short).toLowerCase()] = rng.pick(p.medium);
  return { ip: randomIp(rng, p), headers, method: rng.pick(['GET', 'POST', rng.pick(p.short)]), route: rng.pick([undefined, '/a', '/users/:id', rng.pick(p.medium)]) };
}

/** resolveKey with every kind of answer: found, found with a plan, unknown, a bad plan, a throw, a bad shape. */
const resolveKey: ResolveKey = async (apiKey) => {
  if (apiKey.startsWith('known-')) return { account: apiKey };
  if (apiKey.startsWith('plan-free')) return { account: apiKey, limits: [{ name: 'free', limit: 3, windowMs: '2s' as const }] };
  if (apiKey.startsWith('plan-pro')) return { account: apiKey, limits: [{ name: 'pro', algorithm: 'token-bucket' as const, burst: 20, refillPerSecond: 5 }] };
  if (apiKey.startsWith('plan-bad')) return { account: apiKey, limits: [{ limit: -5 }] };
  if (apiKey.startsWith('plan-throws')) throw new Error('directory unavailable');
  if (apiKey.startsWith('plan-odd')) return 42 as unknown as null;
  return null;
};

const quietLogger = { warn() {}, error() {} };
const SUBJECT = /^(key:[A-Za-z0-9_-]{43}|ip:\d{1,3}(\.\d{1,3}){3}|ip6:[0-9a-f:]+\/\d{1,3}|ip:unknown)$/;

describe('identity under hostile input', () => {
  let server: RedisServer;
  let client: Redis;
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => void unhandled.push(reason);
  // Jest hands tests a sandboxed process; listen on the real one.
  const host = runInThisContext('process') as NodeJS.Process;

  beforeAll(async () => {
    host.on('unhandledRejection', onUnhandled);
    server = await startRedis();
    client = server.client({ autoResendUnfulfilledCommands: false });
  }, 30_000);

  afterAll(async () => {
    host.off('unhandledRejection', onUnhandled);
    client?.disconnect();
    await server?.stop();
  });

  const identifies: [string, () => Identify][] = [
    ['no resolveKey', () => createIdentify({ logger: quietLogger })],
    ["no resolveKey, unverifiedKeys { trust: 'x-api-key' }", () => createIdentify({ logger: quietLogger, unverifiedKeys: { trust: 'x-api-key' } })],
    ["resolveKey, unknownKey 'ip'", () => createIdentify({ logger: quietLogger, resolveKey, keyCache: { max: 100 } })],
    ["resolveKey, unknownKey 'reject', custom headers", () => createIdentify({ logger: quietLogger, resolveKey, unknownKey: 'reject', apiKeyHeaders: ['x-api-key', 'authorization', 'x-other'], ipv6Subnet: 48 })],
  ];

  it.each(identifies)('identify never throws and gives bounded subjects (%s)', async (_name, make) => {
    const identify = make();
    const rng = rngOf(SEED);
    const pools = makePools(rng);
    const kinds = new Map<string, number>();
    const bad: string[] = [];
    for (let i = 0; i < IDENTIFY_RUNS; i++) {
      const f = randomFacts(rng, pools);
      const id: Identity = await identify(f);
      // Only digests and parsed addresses: nothing the caller typed survives into a subject.
      if (id.subject.length > 60 || !SUBJECT.test(id.subject)) bad.push(id.subject.slice(0, 80));
      kinds.set(id.kind, (kinds.get(id.kind) ?? 0) + 1);
    }
    expect(bad).toEqual([]);
    // The generator reached every kind of identity; without a verifier (or trust) no key is an identity of its own.
    expect([...kinds.keys()].sort()).toEqual(_name === 'no resolveKey' ? ['ip', 'unknown'] : ['api-key', 'ip', 'unknown']);
  }, 60_000);

  it('every Redis key the run creates has bounded length and a TTL', async () => {
    const prefix = `fz${Math.random().toString(36).slice(2, 10)}`;
    const store = new RedisStore({ client, timeoutMs: 5_000 });
    const base = { store, prefix, logger: quietLogger, limits: [{ name: 'burst', limit: 3, windowMs: '2s' as const }, { name: 'sustained', algorithm: 'gcra' as const, burst: 10, refillPerSecond: 2 }] };
    const routeLimiter = createLimiter(base);
    const plans = new Map<string, Limiter>();
    const limiterFor = (id: Identity) => {
      if (!id.plan || !id.limits) return routeLimiter;
      let l = plans.get(id.plan);
      if (!l) plans.set(id.plan, (l = createLimiter({ store, prefix, logger: quietLogger, limits: [...id.limits] })));
      return l;
    };
    const identify = createIdentify({ logger: quietLogger, resolveKey, keyCache: { max: 1_000 } });
    const rng = rngOf(SEED + 1);
    const pools = makePools(rng);
    let decided = 0;
    let denied = 0;
    const one = async () => {
      const f = randomFacts(rng, pools);
      const id = await identify(f);
      if (id.rejected) return;
      const scope = `${f.method} ${f.route ?? '<unmatched>'}`;
      const d = await limiterFor(id).consume(id.subject, { scope, cost: rng.int(3) });
      expect(d.degraded).toBe(false);
      decided++;
      if (!d.allowed) denied++;
    };
    for (let done = 0; done < REDIS_RUNS; done += 250) {
      await Promise.all(Array.from({ length: 250 }, one));
    }
    expect(decided).toBe(REDIS_RUNS);
    expect(denied).toBeGreaterThan(0);
    expect(plans.size).toBe(2);

    const keys: string[] = [];
    let cursor = '0';
    do {
      const [next, batch] = await client.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      keys.push(...batch);
    } while (cursor !== '0');
    expect(keys.length).toBeGreaterThan(100);
    const ttls = (await client.pipeline(keys.map((k) => ['pttl', k])).exec())!.map(([err, ttl]) => (err ? -99 : Number(ttl)));
    const longest = Math.max(...keys.map((k) => k.length));
    expect(longest).toBeLessThanOrEqual(prefix.length + 2 + 22 + 2 + 64 + 6);
    for (const key of keys) expect(key).toMatch(new RegExp(`^${prefix}:\\{[A-Za-z0-9_-]{22}\\}:[A-Za-z0-9_.-]{1,70}$`));
    // A key that expired between SCAN and PTTL answers -2; none may be -1 (no TTL).
    expect(ttls.filter((t) => t === -1 || t === -99)).toEqual([]);
    expect(unhandled).toEqual([]);
  }, 60_000);
});
