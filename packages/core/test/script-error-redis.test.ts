// Issue 40, row 3 on a real redis-server: one request's script failure is its own answer, never its coalesced call's, and never a store failure for the breaker.
import { createLimiter, RedisStore, subjectKey, type Decision, type Limiter, type RedisClient } from '../src';
import { CLIENT_KINDS, connectClient, serverWithClient, type ClientKind, type ConnectedClient } from './support/redis-clients';

const redis = serverWithClient();
// Each client RedisStore takes reads the reply's -1 and error text its own way: every one is asked.
const clients = new Map<ClientKind, ConnectedClient>();
beforeAll(async () => {
  for (const kind of CLIENT_KINDS) clients.set(kind, await connectClient(kind, redis.server));
});
afterAll(async () => {
  for (const connected of clients.values()) await connected.close();
});
const rnd = () => `se-${Math.random().toString(36).slice(2, 10)}`;

interface Logged {
  readonly lines: string[];
  readonly logger: { warn(message: string): void; error(message: string): void };
}
function logged(): Logged {
  const lines: string[] = [];
  return { lines, logger: { warn: (m) => void lines.push(m), error: (m) => void lines.push(m) } };
}

/** A limiter on a fresh prefix, failing open (what an attacker would like a script error to buy), one instance. */
function limiterOn(
  prefix: string,
  log: Logged,
  options: { algorithm?: 'fixed-window' | 'sliding-window-log'; concurrency?: number; limit?: number; client?: RedisClient } = {},
): Limiter {
  return createLimiter({
    store: new RedisStore({ client: options.client ?? redis.client, timeoutMs: 5_000 }),
    prefix,
    algorithm: options.algorithm ?? 'fixed-window',
    limit: options.limit ?? 1_000,
    windowMs: '1h',
    concurrency: options.concurrency === undefined ? undefined : { limit: options.concurrency },
    failMode: 'open',
    instances: 1,
    blockCacheSize: 0,
    logger: log.logger,
  });
}

/** Consumes for every subject in one turn of the event loop ('turn' coalescing: one script call), and counts the script calls the store made for them. */
async function oneTurn(limiter: Limiter, requests: readonly (readonly [string, number])[]): Promise<{ decisions: Decision[]; scripts: number }> {
  const calls = () => limiter.health().stores[0].scriptCalls?.calls ?? 0;
  const before = calls();
  const decisions = await Promise.all(requests.map(([subject, cost]) => limiter.consume(subject, { cost })));
  const scripts = calls() - before;
  for (const d of decisions) await d.lease?.release();
  return { decisions, scripts };
}

const view = (d: Decision) => ({ allowed: d.allowed, reason: d.reason, degraded: d.degraded });

describe('a request whose script fails, coalesced with other subjects', () => {
  it('a lease of 5,000 slots in one call with two other subjects: every request decided by Redis, the breaker untouched (the issue\'s probe)', async () => {
    const log = logged();
    const limiter = limiterOn(rnd(), log, { concurrency: 20_000, limit: 1_000_000 });
    const seen: string[] = [];
    for (let call = 1; call <= 5; call++) {
      const { decisions, scripts } = await oneTurn(limiter, [
        ['a', 1],
        ['big', 5_000],
        ['b', 1],
      ]);
      seen.push(`call ${call}: ${scripts} script call(s), ${decisions.map((d) => d.reason).join(' ')}`);
    }
    const { breaker, consecutiveFailures } = limiter.health().stores[0];
    // Before the fix: 'call 1: 1 script call(s), fail-open fail-open fail-open' ... and the breaker open after the fifth.
    expect({ seen, breaker, consecutiveFailures, logged: log.lines }).toEqual({
      seen: [1, 2, 3, 4, 5].map((call) => `call ${call}: 1 script call(s), allowed allowed allowed`),
      breaker: 'closed',
      consecutiveFailures: 0,
      logged: [],
    });
  });

  it.each(
    CLIENT_KINDS.flatMap((client) => [
      [client, 'lease key holds another type (WRONGTYPE)', 'concurrency' as const],
      [client, 'log holds a corrupt sequence member (a Lua error in the script)', 'sliding-window-log' as const],
    ]),
  )('%s: a subject whose %s fails alone: the others get Redis\'s decisions, it gets its local share (never fail-open), five such calls leave the breaker closed, logged once', async (clientKind, _, kind) => {
    const prefix = rnd();
    const log = logged();
    const client = clients.get(clientKind)!.client;
    const limiter = kind === 'concurrency' ? limiterOn(prefix, log, { concurrency: 100, client }) : limiterOn(prefix, log, { algorithm: 'sliding-window-log', client });
    const base = subjectKey(prefix, '', 'bad');
    // The sequence member's name must hold a number: '#x' makes the script do arithmetic on nil
    // (after its ZREM, which Redis keeps: a script's writes are not rolled back; so again before each call).
    const corrupt = () =>
      kind === 'concurrency' ? redis.client.set(`${base}:concurrency.cc`, 'not a lease set') : redis.client.zadd(`${base}:default.swl`, '-inf', '#x');
    const requests = [
      ['good-1', 1],
      ['bad', 1],
      ['good-2', 1],
      ['bad', 1],
      ['good-3', 2],
    ] as const;
    for (let call = 1; call <= 5; call++) {
      await corrupt();
      const { decisions, scripts } = await oneTurn(limiter, requests);
      expect({ call, scripts }).toEqual({ call, scripts: 1 });
      expect({ call, decisions: decisions.map(view) }).toEqual({
        call,
        decisions: [
          { allowed: true, reason: 'allowed', degraded: false },
          { allowed: true, reason: 'fail-local', degraded: true },
          { allowed: true, reason: 'allowed', degraded: false },
          { allowed: true, reason: 'fail-local', degraded: true },
          { allowed: true, reason: 'allowed', degraded: false },
        ],
      });
      // Each good subject counted by Redis once per call, in order: its own figures.
      expect(decisions[0].limits[0].remaining).toBe(1_000 - call);
      expect(decisions[4].limits[0].remaining).toBe(1_000 - 2 * call);
    }
    const health = limiter.health().stores[0];
    expect(health).toMatchObject({ breaker: 'closed', consecutiveFailures: 0, scriptErrors: 10 });
    expect(health.errors).toMatchObject({ timeout: 0, connection: 0, other: 0 });
    expect(log.lines).toHaveLength(1);
    expect(log.lines[0]).toMatch(/the script failed for one subject .*FG_STORE_SCRIPT/);
    // The bad subject's local share is a limit: 1,000 (one instance), counted in this instance's memory.
    await corrupt();
    const local = await limiter.consume('bad', { cost: 1_000 });
    expect(view(local)).toEqual({ allowed: false, reason: 'fail-local', degraded: true });
  });

  it.each([false, 'in-flight'] as const)('coalesce %s: the subject whose script fails gets fail-local, the others Redis\'s decisions, the breaker counts nothing', async (coalesce) => {
    const prefix = rnd();
    const log = logged();
    const limiter = createLimiter({
      store: new RedisStore({ client: redis.client, timeoutMs: 5_000, coalesce }),
      prefix,
      limit: 10,
      windowMs: '1h',
      concurrency: { limit: 5 },
      failMode: 'open',
      instances: 1,
      blockCacheSize: 0,
      logger: log.logger,
    });
    await redis.client.set(`${subjectKey(prefix, '', 'bad')}:concurrency.cc`, 'not a lease set');
    const requests = Array.from({ length: 6 }, (_, i) => [i % 2 ? 'bad' : 'good', 1] as const);
    const { decisions } = await oneTurn(limiter, requests);
    expect(decisions.map((d) => d.reason)).toEqual(['allowed', 'fail-local', 'allowed', 'fail-local', 'allowed', 'fail-local']);
    expect(limiter.health().stores[0]).toMatchObject({ breaker: 'closed', consecutiveFailures: 0, scriptErrors: 3 });
    expect(log.lines).toHaveLength(1);
  });

  it('a refusal of the server itself still fails the whole call, as a store failure (OOM under noeviction)', async () => {
    const log = logged();
    const limiter = limiterOn(rnd(), log);
    await redis.client.config('SET', 'maxmemory', '1');
    try {
      const { decisions } = await oneTurn(limiter, [
        ['a', 1],
        ['b', 1],
      ]);
      expect(decisions.map(view)).toEqual([
        { allowed: true, reason: 'fail-open', degraded: true },
        { allowed: true, reason: 'fail-open', degraded: true },
      ]);
    } finally {
      await redis.client.config('SET', 'maxmemory', '0');
    }
    const health = limiter.health().stores[0];
    expect(health).toMatchObject({ scriptErrors: 0, consecutiveFailures: 2 });
    expect(health.errors.oom).toBe(2);
  });
});

describe('what a large lease costs Redis (printed, not asserted: the basis of the 10,000-slot bound)', () => {
  it('acquire and release of leases of 1, 4,000 and 10,000 slots: each admitted and released, its script time printed', async () => {
    const limiter = limiterOn(rnd(), logged(), { concurrency: 50_000, limit: 1_000_000 });
    const usec = async () => {
      const info = await redis.client.info('commandstats');
      const line = /cmdstat_evalsha:calls=(\d+),usec=(\d+)/.exec(info);
      return line ? { calls: Number(line[1]), usec: Number(line[2]) } : { calls: 0, usec: 0 };
    };
    await limiter.peek('warm'); // loads the script (NOSCRIPT, then EVAL) outside the figures
    const figures: string[] = [];
    for (const cost of [1, 4_000, 10_000]) {
      const before = await usec();
      const d = await limiter.consume(`lease-${cost}`, { cost });
      const acquired = await usec();
      expect({ cost, allowed: d.allowed, degraded: d.degraded }).toEqual({ cost, allowed: true, degraded: false });
      expect(await d.lease!.release()).toBe(true);
      const released = await usec();
      figures.push(`${cost} slots: acquire ${acquired.usec - before.usec} us, release ${released.usec - acquired.usec} us`);
    }
    console.log(`row 3 | Redis script time (INFO commandstats) | ${figures.join(' | ')}`);
  });
});
