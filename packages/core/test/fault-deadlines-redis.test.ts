// Faults, second pass, on a real redis-server: no decision waits past its deadline (hot keys under SIGSTOP), and fail-closed routes serve again soon after a restart.
import { createLimiter, RedisStore, type Decision, type Logger, type StoreErrorEvent } from '@floodgate/core';
import { startRedis, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const rnd = () => `t${Math.random().toString(36).slice(2, 10)}`;
const quiet = (): Logger & { lines: string[] } => {
  const lines: string[] = [];
  return { lines, warn: (m) => lines.push(`warn ${m}`), error: (m) => lines.push(`error ${m}`) };
};

function stats(values: number[]): { median: number; worst: number } {
  const sorted = [...values].sort((a, b) => a - b);
  return { median: sorted[Math.floor(sorted.length / 2)], worst: sorted[sorted.length - 1] };
}

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

let server: RedisServer;
const clients: Redis[] = [];
const measurements: string[] = [];

beforeAll(async () => {
  server = await startRedis();
});

afterAll(async () => {
  for (const c of clients) c.disconnect();
  await server?.stop();
  if (process.env.FLOODGATE_PRINT_MEASUREMENTS) console.log(measurements.join('\n'));
});

function client(): Redis {
  const c = server.client({ autoResendUnfulfilledCommands: false });
  clients.push(c);
  return c;
}

const TIMEOUT_MS = 100;
/**
 * The most a decision may take while Redis hangs: the store deadline, plus a wide margin for a
 * loaded 2-core machine (timers fire late, the event loop is shared with other suites). Without the
 * fix the waiters of a failed lease draw each waited for a draw of their own: seconds, not this.
 */
const FAULT_BOUND_MS = TIMEOUT_MS + 400;

it('hot subject, Redis paused: 100 concurrent requests each answered by failMode within the deadline, not one draw timeout after another', async () => {
  const c = client();
  await c.ping();
  const store = new RedisStore({ client: c, timeoutMs: TIMEOUT_MS });
  const limiter = createLimiter({
    store,
    prefix: rnd(),
    limit: 1_000,
    windowMs: '1m',
    failMode: 'open',
    hotKeys: { threshold: 5, leaseMs: 200 },
    logger: quiet(),
  });
  // Hot, with a lease: then let the lease expire so the next requests must draw.
  for (let i = 0; i < 10; i++) expect((await limiter.consume('hot')).allowed).toBe(true);
  server.pause();
  try {
    await sleep(250);
    const started = performance.now();
    const answers = await Promise.all(
      Array.from({ length: 100 }, async () => {
        const d: Decision = await limiter.consume('hot');
        return { d, ms: performance.now() - started };
      }),
    );
    const s = stats(answers.map((a) => a.ms));
    measurements.push(`hot key, paused, 100 concurrent: median ${s.median.toFixed(1)} ms, max ${s.worst.toFixed(1)} ms (timeoutMs ${TIMEOUT_MS})`);
    expect(answers.every((a) => a.d.reason === 'fail-open')).toBe(true);
    expect(s.worst).toBeLessThan(FAULT_BOUND_MS);
  } finally {
    server.resume();
  }
});

it('Redis killed for 3 s, restarted on the same port: a fail-closed route serves again within 1 s of Redis answering', async () => {
  const c = client();
  await c.ping();
  const events: (StoreErrorEvent & { at: number })[] = [];
  // The default breaker (cool-down 1 s doubling to 10 s): the back-off a long outage builds up.
  const limiter = createLimiter({
    store: new RedisStore({ client: c, timeoutMs: 1_000 }),
    prefix: rnd(),
    limit: 1_000_000,
    windowMs: '10m',
    failMode: 'closed',
    onStoreError: (e) => events.push({ ...e, at: performance.now() }),
    logger: quiet(),
  });
  const served: number[] = [];
  const timer = setInterval(() => {
    void limiter.consume('steady').then((d) => d.allowed && served.push(performance.now()));
  }, 20);
  try {
    await until('a served request', () => served.length > 0);
    await server.kill();
    const killedAt = performance.now();
    await until('the breaker to open', () => events.some((e) => e.state === 'open'));
    await sleep(3_000 - (performance.now() - killedAt));
    await server.restart(); // resolves once redis-server answers PING
    const upAt = performance.now();
    await until('the route to serve again', () => served.some((t) => t > upAt), 15_000);
    const backMs = served.find((t) => t > upAt)! - upAt;
    const probes = events.filter((e) => e.state === 'half-open').length;
    measurements.push(`kill 3 s + restart: fail-closed route served again ${backMs.toFixed(0)} ms after Redis answered PING (${probes} probes)`);
    expect(backMs).toBeLessThan(1_000);
  } finally {
    clearInterval(timer);
  }
});
