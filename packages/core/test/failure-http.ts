// The fault scenarios every adapter runs: one app with fail-open, fail-closed and local routes while Redis is killed, paused and restarted.
import { Agent, request as httpRequest } from 'node:http';
import { runInThisContext } from 'node:vm';
import { startRedis, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import type { StoreErrorEvent } from '../src/failure/policy';
import type { HttpRateLimitOptions } from '../src/http/resolve-http-options';
import { RedisStore } from '../src/stores/redis-store';
import type { Store, StoreRequest, StoreResult } from '../src/stores/store';

export interface FaultRoute {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  /** Per-route overrides, mounted the adapter's usual way (route middleware, Fastify route config). */
  readonly options: HttpRateLimitOptions<any>;
}

export interface FaultAppSpec {
  /** The adapter's global options. */
  readonly options: HttpRateLimitOptions<any>;
  readonly routes: readonly FaultRoute[];
}

export interface FaultApp {
  /** The port it listens on, on 127.0.0.1. */
  readonly port: number;
  close(): Promise<void>;
}

/** Builds a listening app; every route answers 200 with JSON `{ reason }` from the request's decision. */
export type BuildFaultApp = (spec: FaultAppSpec) => Promise<FaultApp>;

interface Reply {
  route: string;
  firedAt: number;
  ms: number;
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** The real process (jest hands tests a sandboxed copy): where unhandled rejections are reported. */
const host = runInThisContext('process') as NodeJS.Process;
const QUOTA_HEADERS = ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'ratelimit-policy', 'ratelimit', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'];
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
/**
 * The store deadline: every healthy answer (before the fault, after recovery) must beat it, so it sits
 * far above this machine's noise (docs/failure-modes.md records a 102 ms healthy worst case on a busy
 * machine; the default 100 ms would make a slow moment look like an outage). A kill is seen at once
 * (the connection closes); a pause is seen when calls pass this deadline.
 */
const HEALTHY_DEADLINE_MS = 1_000;
/** Answers per route collected during each fault (at least 6 for the local route: 5 admitted, then denials). */
const MIN_SAMPLES = 15;

/** Counts the calls that reach the RedisStore (and when), to show what the breaker let through. */
class CountingStore implements Store {
  readonly name = 'redis';
  readonly calls: number[] = [];
  constructor(private readonly inner: RedisStore) {}
  get timeoutMs() {
    return this.inner.timeoutMs;
  }
  get warnings() {
    return this.inner.warnings;
  }
  evaluate(request: StoreRequest): Promise<StoreResult> {
    this.calls.push(performance.now());
    return this.inner.evaluate(request);
  }
  reset(keys: readonly string[]): Promise<void> {
    return this.inner.reset(keys);
  }
}

async function until(what: string, check: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

export function latencyStats(values: number[]): { n: number; median: number; worst: number } {
  const sorted = [...values].sort((a, b) => a - b);
  return { n: sorted.length, median: sorted[Math.floor(sorted.length / 2)] ?? NaN, worst: sorted[sorted.length - 1] ?? NaN };
}

/** Runs the kill/restart and pause/resume scenarios against one adapter. */
export function runFaultScenarios(name: string, build: BuildFaultApp): void {
  describe(`failure modes through ${name}`, () => {
    let server: RedisServer;
    const clients: Redis[] = [];
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => void unhandled.push(reason);
    const agent = new Agent({ keepAlive: true, maxSockets: 64 });
    const measurements: string[] = [];

    beforeAll(async () => {
      server = await startRedis();
      host.on('unhandledRejection', onUnhandled);
      host.on('uncaughtException', onUnhandled);
    });
    afterAll(async () => {
      host.off('unhandledRejection', onUnhandled);
      host.off('uncaughtException', onUnhandled);
      agent.destroy();
      for (const c of clients) c.disconnect();
      await server?.stop();
      if (process.env.FLOODGATE_PRINT_MEASUREMENTS) console.log(measurements.join('\n'));
    });
    afterEach(() => {
      expect(unhandled).toEqual([]);
    });

    /** The app of the issue: customer-facing routes fail open (the default), login fails closed, the feed limits locally. */
    async function faultApp() {
      const client = server.client({ autoResendUnfulfilledCommands: false });
      clients.push(client);
      await client.ping();
      const store = new CountingStore(new RedisStore({ client, timeoutMs: HEALTHY_DEADLINE_MS }));
      const events: (StoreErrorEvent & { at: number })[] = [];
      const logged: string[] = [];
      const app = await build({
        options: {
          store,
          prefix: `t${Math.random().toString(36).slice(2, 10)}`,
          algorithm: 'fixed-window',
          limit: 1_000_000,
          windowMs: '10m',
          retryAfterJitterMs: 0,
          breaker: { failureThreshold: 5, coolDownMs: 200, maxCoolDownMs: 400 },
          onStoreError: (e) => void events.push({ ...e, at: performance.now() }),
          logger: { warn: (m) => void logged.push(m), error: (m) => void logged.push(m) },
        },
        routes: [
          // An override of HTTP options only: the route keeps the global limiter, so the default failMode ('open').
          { method: 'GET', path: '/catalog', options: { cost: 1 } },
          { method: 'POST', path: '/login', options: { failMode: 'closed' } },
          // Keys verified upstream (trust): each request's fresh key is a caller of its own.
          { method: 'GET', path: '/feed', options: { failMode: 'local', instances: 2, limit: 10, unverifiedKeys: 'trust' } },
        ],
      });
      // Warm up (JIT, connections, script cache) before measuring: a cold process under this load
      // can lag its event loop far behind, which is not the fault under test.
      for (let i = 0; i < 30; i++) {
        await send(app.port, 'GET', '/catalog', {});
        await send(app.port, 'POST', '/login', {});
        await send(app.port, 'GET', '/feed', { 'x-api-key': `warm-up-${i}` });
      }
      return { app, store, events, logged };
    }

    function send(port: number, method: string, path: string, headers: Record<string, string>): Promise<Reply> {
      const firedAt = performance.now();
      return new Promise((resolve, reject) => {
        const req = httpRequest({ host: '127.0.0.1', port, method, path, headers, agent }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (body += chunk));
          res.on('end', () => resolve({ route: path, firedAt, ms: performance.now() - firedAt, status: res.statusCode ?? 0, headers: res.headers, body }));
        });
        // A hang, not a speed check: nothing Floodgate does may take anywhere near this long.
        req.setTimeout(10_000, () => req.destroy(new Error(`${method} ${path} hung for 10 s`)));
        req.on('error', reject);
        req.end();
      });
    }

    /** One request per route every 5 ms, not waiting for answers, like independent clients. */
    function steadyLoad(port: number, feedKey: () => string) {
      const replies: Reply[] = [];
      const errors: unknown[] = [];
      const pending = new Set<Promise<void>>();
      const fire = (method: string, path: string, headers: Record<string, string> = {}) => {
        const p = send(port, method, path, headers).then(
          (r) => void replies.push(r),
          (e: unknown) => void errors.push(e),
        );
        pending.add(p);
        void p.finally(() => pending.delete(p));
      };
      const timer = setInterval(() => {
        fire('GET', '/catalog');
        fire('POST', '/login');
        fire('GET', '/feed', { 'x-api-key': feedKey() });
      }, 5);
      return {
        replies,
        errors,
        async stop() {
          clearInterval(timer);
          await Promise.all([...pending]);
        },
      };
    }

    function measure(label: string, replies: Reply[]): void {
      for (const route of ['/catalog', '/login', '/feed']) {
        const s = latencyStats(replies.filter((r) => r.route === route).map((r) => r.ms));
        measurements.push(`${name} | ${label} | ${route}: n=${s.n} median=${s.median.toFixed(2)} ms worst=${s.worst.toFixed(2)} ms`);
      }
    }

    /** Enough answers fired after `t` on every route (a loaded machine fires fewer per second). */
    const enough = (replies: Reply[], t: number) =>
      ['/catalog', '/login', '/feed'].every((route) => replies.filter((r) => r.route === route && r.firedAt > t).length >= MIN_SAMPLES);

    const quota = (r: Reply) => QUOTA_HEADERS.filter((h) => r.headers[h] !== undefined);

    /** What each route answers while the store is down: the contract, over HTTP. */
    function checkDegraded(replies: Reply[]): void {
      const catalog = replies.filter((r) => r.route === '/catalog');
      const login = replies.filter((r) => r.route === '/login');
      const feed = replies.filter((r) => r.route === '/feed');
      for (const list of [catalog, login, feed]) expect(list.length).toBeGreaterThanOrEqual(MIN_SAMPLES);
      for (const r of [...catalog, ...login, ...feed]) expect(quota(r)).toEqual([]); // no made-up quota headers
      for (const r of catalog) {
        expect(r.status).toBe(200);
        expect(JSON.parse(r.body).reason).toBe('fail-open');
      }
      for (const r of login) {
        expect(r.status).toBe(503);
        expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      }
      // Local: this instance's share, floor(10 / 2) = 5, then 429 with Retry-After.
      const ok = feed.filter((r) => r.status === 200);
      expect(ok.length).toBe(5);
      for (const r of ok) expect(JSON.parse(r.body).reason).toBe('fail-local');
      const limited = feed.filter((r) => r.status !== 200);
      for (const r of limited) {
        expect(r.status).toBe(429);
        expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      }
    }

    it('Redis killed: open routes 200, closed 503 + Retry-After, local limits at its share; restarted: limiting resumes', async () => {
      const { app, events, logged } = await faultApp();
      let feedKey = 'before';
      const load = steadyLoad(app.port, () => feedKey);
      try {
        await sleep(300);
        await until('answers while healthy', () => enough(load.replies, 0));
        const killedAt = performance.now();
        feedKey = 'during-kill';
        await server.kill();
        await until('the breaker to open', () => events.some((e) => e.state === 'open'));
        await sleep(600);
        await until('answers during the outage', () => enough(load.replies, killedAt));
        const restartedAt = performance.now();
        await server.restart();
        const upAt = performance.now();
        await until('limiting to resume', () => load.replies.some((r) => r.firedAt > restartedAt && r.route === '/login' && r.status === 200));
        await sleep(100);
        await load.stop();
        expect(load.errors).toEqual([]);

        const before = load.replies.filter((r) => r.firedAt + r.ms < killedAt);
        const healthy = before.filter((r) => r.route === '/catalog');
        expect(healthy.length).toBeGreaterThan(10);
        for (const r of healthy) {
          expect(r.status).toBe(200);
          expect(r.headers['ratelimit-limit']).toBe('1000000');
        }
        const during = load.replies.filter((r) => r.firedAt > killedAt && r.firedAt < restartedAt);
        checkDegraded(during);
        measure('healthy', before);
        measure('Redis killed', during);
        const closedAt = events.find((e) => e.state === 'closed' && e.at > restartedAt)!.at;
        measurements.push(`${name} | limiting resumed ${(closedAt - upAt).toFixed(0)} ms after redis-server answered PING again`);

        const resumed = load.replies.filter((r) => r.firedAt > restartedAt && r.route === '/catalog' && JSON.parse(r.body).reason === 'allowed');
        expect(resumed.length).toBeGreaterThan(0);
        for (const r of resumed) expect(r.headers['ratelimit-limit']).toBe('1000000');
        // Three routes, three limiters, one store: one breaker, each state change reported once.
        const states = events.map((e) => e.state);
        expect(states[0]).toBe('open');
        expect(states[states.length - 1]).toBe('closed');
        for (let i = 1; i < states.length; i++) expect(states[i]).not.toBe(states[i - 1]);
        expect(logged.length).toBe(events.length);
      } finally {
        await load.stop();
        await app.close();
      }
    });

    it('Redis paused (SIGSTOP): the same answers; once the breaker is open only its probes wait on Redis', async () => {
      const { app, store, events } = await faultApp();
      let feedKey = 'before';
      const load = steadyLoad(app.port, () => feedKey);
      let paused = false;
      try {
        await sleep(300);
        const pausedAt = performance.now();
        feedKey = 'during-pause';
        server.pause();
        paused = true;
        await until('the breaker to open', () => events.some((e) => e.state === 'open'));
        const openedAt = performance.now();
        await sleep(1_000);
        await until('answers while the breaker is open', () => enough(load.replies, openedAt));
        const resumedAt = performance.now();
        server.resume();
        paused = false;
        await until('limiting to resume', () => events.some((e) => e.state === 'closed'));
        await sleep(100);
        await load.stop();
        expect(load.errors).toEqual([]);

        // Fired and answered while Redis was stopped (a probe in flight at SIGCONT gets Redis' answer).
        const during = load.replies.filter((r) => r.firedAt > pausedAt && r.firedAt + r.ms < resumedAt);
        checkDegraded(during);
        measure('Redis paused, from SIGSTOP', during);
        measure('Redis paused, breaker open', during.filter((r) => r.firedAt > openedAt));
        const probes = events.filter((e) => e.state === 'half-open' && e.at > openedAt && e.at < resumedAt).length;
        expect(probes).toBeGreaterThanOrEqual(1);
        expect(store.calls.filter((t) => t > openedAt && t < resumedAt).length).toBe(probes);
        const after = load.replies.filter((r) => r.firedAt > events.find((e) => e.state === 'closed')!.at && r.route === '/catalog');
        expect(after.length).toBeGreaterThan(0);
        for (const r of after) expect(r.headers['ratelimit-limit']).toBe('1000000');
      } finally {
        if (paused) server.resume();
        await load.stop();
        await app.close();
      }
    });
  });
}
