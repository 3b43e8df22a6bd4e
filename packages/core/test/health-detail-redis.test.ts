// The health snapshot on a real redis-server made to fail (issue #40 row 9): the store's state and error kind by default, its raw words (OOM text, config, connection errors) only with { detail: true }.
import { createLimiter, FloodgateError, RedisStore, type Health, type Limiter } from '../src';
import { pollUntil, startRedis, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';

const servers: RedisServer[] = [];
const clients: Redis[] = [];

afterAll(async () => {
  for (const c of clients) c.disconnect();
  await Promise.all(servers.map((s) => s.stop()));
});

async function limiterOn(args: string[], extra: object = {}): Promise<{ server: RedisServer; store: RedisStore; limiter: Limiter }> {
  const server = await startRedis({ args });
  servers.push(server);
  const client = server.client({ autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 0 });
  clients.push(client);
  const store = new RedisStore({ client, timeoutMs: 2_000 });
  const quiet = { warn: () => undefined, error: () => undefined };
  const limiter = createLimiter({ store, prefix: `hd${Math.random().toString(36).slice(2, 8)}`, limit: 10, windowMs: '1m', failMode: 'closed', logger: quiet, ...extra });
  return { server, store, limiter };
}

/** The raw words a public health body must not carry. */
const RAW = /OOM command|maxmemory|allkeys-lru|Connection is closed|ECONNREFUSED|FG_STORE_|127\.0\.0\.1|Redis refused/i;

it("a refusal under maxmemory: kind 'oom' and status 'degraded' by default, Redis's own words only with { detail: true }", async () => {
  const { limiter } = await limiterOn(['--maxmemory', '1', '--maxmemory-policy', 'noeviction']);
  expect(await limiter.consume('a')).toMatchObject({ allowed: false, degraded: true });
  const health: Health = limiter.health();
  expect(health.stores[0]).toMatchObject({ status: 'degraded', breaker: 'closed', errors: { oom: 1 }, lastError: { kind: 'oom', at: expect.any(String) } });
  expect(health.stores[0].lastError).not.toHaveProperty('message');
  expect(JSON.stringify(health)).not.toMatch(RAW);
  const detailed = limiter.health({ detail: true }).stores[0];
  expect(detailed.lastError?.message).toMatch(/OOM command not allowed when used memory > 'maxmemory'/);
});

it("an evicting maxmemory-policy: a warning count by default, the warning's text (the server's configuration) only with { detail: true }", async () => {
  const { store, limiter } = await limiterOn(['--maxmemory', '64mb', '--maxmemory-policy', 'allkeys-lru']);
  await limiter.consume('a');
  await pollUntil(async () => store.memoryPolicy, { timeoutMs: 5_000, what: 'the maxmemory-policy check' });
  const health = limiter.health();
  expect(health.stores[0]).toMatchObject({ status: 'ok', warningCount: 1 });
  expect(health.stores[0]).not.toHaveProperty('warnings');
  expect(JSON.stringify(health)).not.toMatch(RAW);
  expect(limiter.health({ detail: true }).stores[0].warnings).toEqual([expect.stringContaining("maxmemory-policy is 'allkeys-lru'")]);
});

it("a killed server: status 'down' with the breaker open and kind 'connection', no message by default", async () => {
  const { server, limiter } = await limiterOn([], { breaker: { failureThreshold: 2, coolDownMs: 60_000 } });
  expect((await limiter.consume('a')).degraded).toBe(false);
  await server.kill();
  await pollUntil(async () => ((await limiter.consume('a')).degraded && limiter.health().stores[0].breaker === 'open') || undefined, { timeoutMs: 10_000, what: 'the breaker to open' });
  const health = limiter.health();
  expect(health.healthy).toBe(false);
  expect(health.stores[0]).toMatchObject({ status: 'down', breaker: 'open', lastError: { kind: 'connection' } });
  expect(JSON.stringify(health)).not.toMatch(RAW);
  expect(limiter.health({ detail: true }).stores[0].lastError?.message).toEqual(expect.any(String));
});

it('refuses bad health options with a clear error', async () => {
  const { limiter } = await limiterOn([]);
  expect(() => limiter.health({ detail: 'yes' as never })).toThrow(FloodgateError);
  expect(() => limiter.health({ details: true } as never)).toThrow(/did you mean `detail`/);
});
