// NOSCRIPT fallback on each client (ioredis 5 and 6, node-redis): after SCRIPT FLUSH on the server the next consume still works (EVAL) and counts exactly once.
import { startRedis, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import { createLimiter, RedisStore, type LimiterOptions } from '../src';
import { CLIENT_KINDS, connectClient, kindTag, type ConnectedClient } from './support/redis-clients';

let server: RedisServer;
let client: Redis;
const clients = new Map<string, ConnectedClient>();

beforeAll(async () => {
  server = await startRedis();
  client = server.client({ autoResendUnfulfilledCommands: false });
  await client.ping();
  for (const kind of CLIENT_KINDS) clients.set(kind, await connectClient(kind, server));
}, 30_000);

afterAll(async () => {
  for (const connected of clients.values()) await connected.close();
  client?.disconnect();
  await server?.stop();
});

// One case per generated script: each algorithm's own, and `all` for mixed limits.
const CASES: [string, LimiterOptions][] = [
  ['fixed-window', { algorithm: 'fixed-window', limit: 5, windowMs: '1h' }],
  ['sliding-window-log', { algorithm: 'sliding-window-log', limit: 5, windowMs: '1h' }],
  ['sliding-window-counter', { algorithm: 'sliding-window-counter', limit: 5, windowMs: '1h' }],
  ['token-bucket', { algorithm: 'token-bucket', burst: 5, refillPerSecond: 1 / 3600 }],
  ['gcra', { algorithm: 'gcra', burst: 5, refillPerSecond: 1 / 3600 }],
  ['all (mixed limits)', { limits: [{ name: 'a', algorithm: 'gcra', burst: 5, refillPerSecond: 1 / 3600 }, { name: 'b', algorithm: 'fixed-window', limit: 50, windowMs: '1h' }] }],
];

const calls = async () => {
  const stats = await server.commandStats();
  return { evalsha: stats.evalsha ?? 0, eval: stats.eval ?? 0 };
};

describe.each(CLIENT_KINDS)('on %s', (kind) => {
  it.each(CASES)('%s: after SCRIPT FLUSH, EVALSHA fails once, EVAL runs once, the request counts once', async (name, options) => {
    const store = new RedisStore({ client: clients.get(kind)!.client, timeoutMs: 5_000 });
    const limiter = createLimiter({ ...options, store, prefix: `ns-${kindTag(kind)}-${name.replace(/\W+/g, '-')}`, blockCacheSize: 0, failMode: 'closed' });

    const first = await limiter.consume('s');
    expect({ allowed: first.allowed, remaining: first.remaining, degraded: first.degraded }).toEqual({ allowed: true, remaining: 4, degraded: false });

    await client.script('FLUSH');
    await server.resetStats();
    const afterFlush = await limiter.consume('s');
    expect({ allowed: afterFlush.allowed, remaining: afterFlush.remaining, degraded: afterFlush.degraded }).toEqual({ allowed: true, remaining: 3, degraded: false });
    // NOSCRIPT from EVALSHA, then one EVAL (which also loads the script); nothing else ran it.
    expect(await calls()).toEqual({ evalsha: 1, eval: 1 });

    // Counted exactly once: 2 used, so 3 fit exactly and a 4th does not.
    const rest = await limiter.consume('s', { cost: 3 });
    expect({ allowed: rest.allowed, remaining: rest.remaining }).toEqual({ allowed: true, remaining: 0 });
    expect((await limiter.consume('s')).allowed).toBe(false);
    // The EVAL loaded the script: EVALSHA works again, no more EVAL.
    expect(await calls()).toEqual({ evalsha: 3, eval: 1 });
  });
});
