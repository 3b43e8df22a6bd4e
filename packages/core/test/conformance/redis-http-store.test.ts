// The conformance table against RedisStore over HTTP (@upstash/redis through a local server speaking Upstash's REST protocol, in front of a real redis-server); then the race over HTTP, exact, and a turn's calls in one pipeline request.
import { startRedis, startRedisRest, type RedisRestServer, type RedisServer } from '@floodgate/testing';
import { Redis as HttpRedis } from '@upstash/redis';
import { createLimiter, RedisStore, type AlgorithmName } from '../../src';
import { watchExpiry, type ExpiryWatch } from './expiry-watch';
import { describeConformance } from './scenarios';

let server: RedisServer;
let rest: RedisRestServer;
let expiry: ExpiryWatch | undefined;
const prefix = `conf-http-${Math.random().toString(36).slice(2, 10)}`;

const run = Math.random().toString(36).slice(2, 8);
const httpClient = (autoPipelining = true, front = rest): HttpRedis =>
  new HttpRedis({ url: front.url, token: front.token, retry: { retries: 0 }, enableTelemetry: false, enableAutoPipelining: autoPipelining });

beforeAll(async () => {
  server = await startRedis();
  rest = await startRedisRest(server);
  expiry = await watchExpiry(server);
}, 30_000);

afterAll(async () => {
  expiry?.close();
  await rest?.stop();
  await server?.stop();
});

describeConformance('conformance: RedisStore over HTTP (@upstash/redis)', (clock) => new RedisStore({ client: httpClient(), timeoutMs: 30_000, UNSAFE_testClock: clock }), {
  prefix,
  expiry: () => expiry,
});

describe('RedisStore over HTTP', () => {
  it('is recognised as an HTTP client, warns about retries, and runs the scripts (EVALSHA; EVAL once after NOSCRIPT)', async () => {
    const retrying = new RedisStore({ client: new HttpRedis({ url: rest.url, token: rest.token, enableTelemetry: false }) });
    expect(retrying.warnings.join(' ')).toMatch(/retries a failed request/);
    const store = new RedisStore({ client: httpClient(), timeoutMs: 30_000 });
    expect(store.warnings).toEqual([]);
    await server.command(['SCRIPT', 'FLUSH']);
    await server.resetStats();
    const limiter = createLimiter({ store, prefix: `${prefix}-noscript`, limit: 2, windowMs: 60_000, failMode: 'closed' });
    const decisions = [await limiter.consume('a'), await limiter.consume('a'), await limiter.consume('a')];
    expect(decisions.map((d) => [d.allowed, d.remaining])).toEqual([
      [true, 1],
      [true, 0],
      [false, 0],
    ]);
    const stats = await server.commandStats();
    expect({ evalsha: stats.evalsha, eval: stats.eval }).toEqual({ evalsha: 3, eval: 1 });
  });

  it("sends one turn's calls for many subjects as one pipeline request", async () => {
    // A REST front of its own, the client's auto-pipelining off, and no fleet announcements: every request it sees is this store's.
    const own = await startRedisRest(server);
    const store = new RedisStore({ client: httpClient(false, own), timeoutMs: 30_000 });
    // Two algorithms: two scripts, so the turn's calls are two, in one /pipeline request.
    const a = createLimiter({ store, prefix: `${prefix}-pipe-a`, limit: 5, windowMs: 60_000, failMode: 'closed', instances: 1 });
    const b = createLimiter({ store, prefix: `${prefix}-pipe-b`, algorithm: 'gcra', burst: 5, refillPerSecond: 1 / 3600, failMode: 'closed', instances: 1 });
    // Scripts loaded first (the first EVALSHA of a script after SCRIPT FLUSH above is followed by an EVAL of its own).
    await Promise.all([a.peek('x'), b.peek('x')]);
    const before = { ...own.requests };
    const calls = { ...store.scriptStats };
    const decisions = await Promise.all([a.consume('x'), a.consume('y'), b.consume('x'), b.consume('y')]);
    expect(decisions.every((d) => d.allowed && d.remaining === 4)).toBe(true);
    expect(own.requests.single - before.single).toBe(0);
    expect(own.requests.pipeline - before.pipeline).toBe(1);
    expect(own.requests.pipelinedCommands - before.pipelinedCommands).toBe(2);
    expect({ calls: store.scriptStats.calls - calls.calls, requests: store.scriptStats.requests - calls.requests }).toEqual({ calls: 2, requests: 4 });
    await own.stop();
  });

  // Many clients at once on one subject, every algorithm: exactly the limit, however the requests interleave over HTTP.
  const CLIENTS = 8;
  const PER_CLIENT = 150;
  const LIMIT = 100;
  const ALGORITHMS: readonly AlgorithmName[] = ['fixed-window', 'sliding-window-log', 'sliding-window-counter', 'token-bucket', 'gcra'];
  it.each(ALGORITHMS)('race: %s admits exactly the limit (8 clients x 150 requests, one subject)', async (algorithm) => {
    const limiters = Array.from({ length: CLIENTS }, () =>
      createLimiter({
        store: new RedisStore({ client: httpClient(), timeoutMs: 30_000 }),
        prefix: `hr${run}-${algorithm}`,
        ...(algorithm === 'token-bucket' || algorithm === 'gcra' ? { algorithm, burst: LIMIT, refillPerSecond: 1 / 3600 } : { algorithm, limit: LIMIT, windowMs: '1h' }),
        failMode: 'closed',
        blockCacheSize: 0,
      }),
    );
    const decisions = await Promise.all(limiters.flatMap((limiter) => Array.from({ length: PER_CLIENT }, () => limiter.consume('one-shared-subject'))));
    const reasons = new Set(decisions.filter((d) => !d.allowed).map((d) => d.reason));
    expect({ admitted: decisions.filter((d) => d.allowed).length, reasons: [...reasons] }).toEqual({ admitted: LIMIT, reasons: ['limited'] });
  }, 60_000);
});
