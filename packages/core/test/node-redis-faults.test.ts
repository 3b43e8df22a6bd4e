// node-redis under real faults (redis-server killed, paused, restarted): open and closed endpoints answer within the deadline, nothing waits in node-redis's offline queue, and the construction warnings.
import { pollUntil as poll, startRedis, type RedisServer } from '@floodgate/testing';
import { createClient } from 'redis';
import { createLimiter, FloodgateError, RedisStore, type CreateLimiterOptions, type Decision, type Limiter } from '../src';

const TIMEOUT_MS = 300;

/** Waits (up to 10 s) until `check` holds. */
const until = (what: string, check: () => boolean | Promise<boolean>) => poll(async () => ((await check()) ? true : undefined), { timeoutMs: 10_000, what });
const quiet = (): void => {};
const silentLogger = { warn: quiet, error: quiet };

let server: RedisServer;
const opened: { destroy(): void; isOpen: boolean }[] = [];

beforeAll(async () => {
  server = await startRedis();
}, 30_000);

afterAll(async () => {
  for (const client of opened) if (client.isOpen) client.destroy();
  await server?.stop();
});

/** A connected node-redis client with an 'error' listener and a quick reconnect, as the docs ask. */
async function connected() {
  const client = createClient({ url: server.url, socket: { reconnectStrategy: (retries: number) => Math.min(retries * 50, 200) } });
  client.on('error', quiet);
  opened.push(client);
  await client.connect();
  return client;
}

/** One open and one closed endpoint on the store; the breaker never opens here, so every request reaches the store. */
function endpoints(store: RedisStore, prefix = `nrf${Math.random().toString(36).slice(2, 8)}`) {
  const common: CreateLimiterOptions = { store, prefix, limit: 100, windowMs: '10m', logger: silentLogger, breaker: { failureThreshold: 1_000 } };
  return { prefix, open: createLimiter({ ...common, failMode: 'open' }), closed: createLimiter({ ...common, failMode: 'closed' }) };
}

/**
 * The same keys through a store on the same client with a deadline a loaded machine cannot miss: the
 * checks before and after a fault ask what Redis counted, which a call past the 300 ms deadline would
 * answer with the failure policy instead (seen at load 30 on 2 cores).
 */
const patient = (client: Awaited<ReturnType<typeof connected>>, prefix: string) => endpoints(new RedisStore({ client, timeoutMs: 30_000 }), prefix).closed;

/** A decision, and whether it came back before the deadline plus a margin for a shared machine (not a speed claim). */
async function timed(limiter: Limiter): Promise<{ decision: Decision; withinDeadline: boolean }> {
  const started = performance.now();
  const decision = await limiter.consume('s');
  return { decision, withinDeadline: performance.now() - started < TIMEOUT_MS + 2_000 };
}

it('Redis killed: open serves, closed refuses, each within the deadline and without queueing; restarted: limiting resumes and nothing queued runs late', async () => {
  const client = await connected();
  const store = new RedisStore({ client, timeoutMs: TIMEOUT_MS });
  const { open, closed, prefix } = endpoints(store);
  const sure = patient(client, prefix);
  expect((await sure.consume('s')).reason).toBe('allowed');

  await server.kill();
  await until('the client to see the connection drop', () => !client.isReady);
  const during = [await timed(open), await timed(closed), await timed(open), await timed(closed)];
  expect(during.map((t) => [t.decision.reason, t.decision.degraded, t.withinDeadline])).toEqual([
    ['fail-open', true, true],
    ['fail-closed', true, true],
    ['fail-open', true, true],
    ['fail-closed', true, true],
  ]);
  // Refused before sending, by the connection check: the offline queue never held them.
  await expect(store.evaluate({ keys: ['{x}:k'], limits: [{ algorithm: 'fixed-window', capacity: 1, windowMs: 1000 }], cost: 1, mode: 'consume' })).rejects.toMatchObject({
    code: 'FG_STORE_UNAVAILABLE',
    message: expect.stringContaining('reconnecting'),
  });

  await server.restart();
  await until('the client to reconnect', () => client.isReady);
  await server.resetStats();
  const after = await sure.consume('s');
  expect([after.reason, after.degraded]).toEqual(['allowed', false]);
  // Restarted empty (data is not kept): this is the first request it counted. Nothing that was
  // refused during the outage reached it afterwards.
  expect(after.remaining).toBe(99);
  const stats = await server.commandStats();
  expect((stats.evalsha ?? 0) + (stats.eval ?? 0)).toBe(2); // NOSCRIPT on the fresh server, then EVAL
}, 40_000);

it('Redis paused (SIGSTOP): open serves and closed refuses at the deadline; resumed, each timed-out script ran once and limiting goes on', async () => {
  const client = await connected();
  const store = new RedisStore({ client, timeoutMs: TIMEOUT_MS });
  const { open, closed, prefix } = endpoints(store);
  const sure = patient(client, prefix);
  expect((await sure.consume('s')).remaining).toBe(99);

  server.pause();
  let during;
  try {
    during = [await timed(open), await timed(closed)];
  } finally {
    server.resume();
  }
  expect(during.map((t) => [t.decision.reason, t.decision.degraded, t.withinDeadline])).toEqual([
    ['fail-open', true, true],
    ['fail-closed', true, true],
  ]);
  // The two timed-out scripts were written before the pause hit and run once on resume; the next
  // decision sees them (96 = 100 - 1 before - 2 timed out - this one), never a resend.
  await until('the timed-out scripts to run', async () => ((await server.commandStats()).evalsha ?? 0) >= 3);
  const next = await sure.consume('s');
  expect([next.reason, next.remaining]).toEqual(['allowed', 96]);
}, 40_000);

it('a client that was never connected fails at once, saying to connect it', async () => {
  const client = createClient({ url: server.url });
  client.on('error', quiet);
  const store = new RedisStore({ client, timeoutMs: TIMEOUT_MS });
  const error = await store.reset(['{x}:k']).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(FloodgateError);
  expect(error).toMatchObject({ code: 'FG_STORE_UNAVAILABLE', message: expect.stringContaining('await client.connect()') });
});

it('warns at construction about a client without an error listener, and one that never reconnects', () => {
  const bare = createClient({ url: server.url });
  expect(new RedisStore({ client: bare }).warnings).toEqual([expect.stringContaining("has no 'error' listener")]);
  const giveUp = createClient({ url: server.url, socket: { reconnectStrategy: false } });
  giveUp.on('error', quiet);
  expect(new RedisStore({ client: giveUp }).warnings).toEqual([expect.stringContaining('reconnectStrategy: false')]);
  const careful = createClient({ url: server.url });
  careful.on('error', quiet);
  expect(new RedisStore({ client: careful }).warnings).toEqual([]);
});

it('reset deletes the keys through node-redis', async () => {
  const client = await connected();
  const limiter = createLimiter({ store: new RedisStore({ client, timeoutMs: 5_000 }), prefix: 'nrreset', limit: 1, windowMs: '10m', blockCacheSize: 0 });
  expect((await limiter.consume('s')).allowed).toBe(true);
  expect((await limiter.consume('s')).allowed).toBe(false);
  await limiter.reset('s');
  expect((await limiter.consume('s')).allowed).toBe(true);
});
