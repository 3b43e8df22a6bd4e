// The fault scenarios every adapter runs: one app with fail-open, fail-closed and local routes while Redis is killed, paused and restarted.
import { Agent, request as httpRequest } from 'node:http';
import { RedisStore, type StoreErrorEvent } from '@floodgate/core';
import type { Redis } from 'ioredis';
import {
  CountingStore,
  HEALTHY_DEADLINE_MS,
  MIN_SAMPLES,
  enoughPerRoute,
  failOnUnhandledErrors,
  killAndRestart,
  measurementLog,
  pauseAndResume,
  steadyLoad,
  type FaultWatch,
  type Fired,
  startRedis,
  type RedisServer,
} from '@floodgate/testing';
import type { AdapterHarness } from './harness';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}
type Reply = Answer & Fired;

const ROUTES = ['/catalog', '/login', '/feed'];
const QUOTA_HEADERS = ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'ratelimit-policy', 'ratelimit', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'floodgate-reset-ms'];

/** Runs the kill/restart and pause/resume scenarios against one adapter (app-level limiter, per-route overrides). */
export function runFaultScenarios(h: AdapterHarness): void {
  describe(`failure modes through ${h.name}`, () => {
    let server: RedisServer;
    const clients: Redis[] = [];
    const agent = new Agent({ keepAlive: true, maxSockets: 64 });
    const measurements = measurementLog();
    failOnUnhandledErrors();

    beforeAll(async () => {
      server = await startRedis();
    });
    afterAll(async () => {
      agent.destroy();
      for (const c of clients) c.disconnect();
      await server?.stop();
    });

    /** The app of the issue: customer-facing routes fail open (the default), login fails closed, the feed limits locally. */
    async function faultApp() {
      const client = server.client({ autoResendUnfulfilledCommands: false });
      clients.push(client);
      await client.ping();
      const store = new CountingStore(new RedisStore({ client, timeoutMs: HEALTHY_DEADLINE_MS }));
      const events: (StoreErrorEvent & { at: number })[] = [];
      const logged: string[] = [];
      const app = await h.start({
        options: {
          store,
          prefix: `t${Math.random().toString(36).slice(2, 10)}`,
          algorithm: 'fixed-window',
          limit: 1_000_000,
          windowMs: '10m',
          retryAfterJitterMs: 0,
          // Named: the app-wide mode here is fail-open (the default is 'local', which /feed shows).
          failMode: 'open',
          breaker: { failureThreshold: 5, coolDownMs: 200, maxCoolDownMs: 400 },
          onStoreError: (e) => void events.push({ ...e, at: performance.now() }),
          logger: { warn: (m) => void logged.push(m), error: (m) => void logged.push(m) },
        },
        routes: [
          // An override of HTTP options only: the route keeps the global limiter, so its failMode ('open').
          { method: 'GET', path: '/catalog', options: { cost: 1 } },
          { method: 'POST', path: '/login', options: { failMode: 'closed' } },
          // Keys verified upstream (trust): each request's fresh key is a caller of its own. gcra with a
          // one-hour refill, not the 10-minute fixed window: a wall-clock window edge inside a
          // seconds-long outage would legitimately admit a second share.
          { method: 'GET', path: '/feed', options: { failMode: 'local', instances: 2, algorithm: 'gcra', burst: 10, refillPerSecond: 10 / 3_600, unverifiedKeys: { trust: 'x-api-key' } } },
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

    /** The app under a steady load ('before' the fault: healthy), and what the fault choreography watches; the feed's key can be switched per phase. */
    async function underLoad() {
      const { app, store, events, logged } = await faultApp();
      const phase = { feedKey: 'before' };
      const running = load(app.port, () => phase.feedKey);
      const replies = running.samples;
      const watch: FaultWatch = {
        enough: (since) => enoughPerRoute(replies, ROUTES, since),
        breakerOpen: () => events.some((e) => e.state === 'open'),
        resumed: (since) => replies.some((r) => r.firedAt > since && r.route === '/login' && r.status === 200),
      };
      return { app, store, events, logged, phase, running, replies, watch };
    }

    function send(port: number, method: string, path: string, headers: Record<string, string>): Promise<Answer> {
      return new Promise((resolve, reject) => {
        const req = httpRequest({ host: '127.0.0.1', port, method, path, headers, agent }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (body += chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        });
        // A hang, not a speed check: nothing Floodgate does may take anywhere near this long.
        req.setTimeout(10_000, () => req.destroy(new Error(`${method} ${path} hung for 10 s`)));
        req.on('error', reject);
        req.end();
      });
    }

    /** One request per route every 5 ms, not waiting for answers, like independent clients. */
    const load = (port: number, feedKey: () => string) =>
      steadyLoad({
        '/catalog': () => send(port, 'GET', '/catalog', {}),
        '/login': () => send(port, 'POST', '/login', {}),
        '/feed': () => send(port, 'GET', '/feed', { 'x-api-key': feedKey() }),
      });

    const measure = (label: string, replies: Reply[]) => measurements.latencies(`${h.name} | ${label} |`, replies);
    const quota = (r: Reply) => QUOTA_HEADERS.filter((name) => r.headers[name] !== undefined);

    /** What each route answers while the store is down: the contract, over HTTP. */
    function checkDegraded(replies: Reply[], paused = false): void {
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
      // Local: this instance's share, floor(10 / 2) = 5, then 429 with Retry-After. Paused, at most
      // that: the subject's calls sent before the breaker opened stay pending in Redis, which runs them
      // when it resumes, and they come off the share first (issue 49).
      const ok = feed.filter((r) => r.status === 200);
      if (paused) expect(ok.length).toBeLessThanOrEqual(5);
      else expect(ok.length).toBe(5);
      for (const r of ok) expect(JSON.parse(r.body).reason).toBe('fail-local');
      const limited = feed.filter((r) => r.status !== 200);
      for (const r of limited) {
        expect(r.status).toBe(429);
        expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      }
    }

    it('Redis killed: open routes 200, closed 503 + Retry-After, local limits at its share; restarted: limiting resumes', async () => {
      const { app, events, logged, phase, running, replies, watch } = await underLoad();
      try {
        const { killedAt, restartedAt, upAt } = await killAndRestart(server, watch, { onKill: () => (phase.feedKey = 'during-kill') });
        await running.stop();
        expect(running.errors).toEqual([]);

        const before = replies.filter((r) => r.firedAt + r.ms < killedAt);
        const healthy = before.filter((r) => r.route === '/catalog');
        expect(healthy.length).toBeGreaterThan(10);
        for (const r of healthy) {
          expect(r.status).toBe(200);
          expect(r.headers['ratelimit-limit']).toBe('1000000');
        }
        const during = replies.filter((r) => r.firedAt > killedAt && r.firedAt < restartedAt);
        checkDegraded(during);
        measure('healthy', before);
        measure('Redis killed', during);
        const closedAt = events.find((e) => e.state === 'closed' && e.at > restartedAt)!.at;
        measurements.add(`${h.name} | limiting resumed ${(closedAt - upAt).toFixed(0)} ms after redis-server answered PING again`);

        const resumed = replies.filter((r) => r.firedAt > restartedAt && r.route === '/catalog' && JSON.parse(r.body).reason === 'allowed');
        expect(resumed.length).toBeGreaterThan(0);
        for (const r of resumed) expect(r.headers['ratelimit-limit']).toBe('1000000');
        // Three routes, three limiters, one store: one breaker, each state change reported once.
        const states = events.map((e) => e.state);
        expect(states[0]).toBe('open');
        expect(states[states.length - 1]).toBe('closed');
        for (let i = 1; i < states.length; i++) expect(states[i]).not.toBe(states[i - 1]);
        // One line at the outage's first failed call, naming the three routes' failModes, then one per state change.
        const firstFailure = logged.filter((m) => m.includes('requests it cannot decide are now'));
        expect(firstFailure).toHaveLength(1);
        expect(logged[0]).toBe(firstFailure[0]);
        for (const mode of ['open', 'closed', 'local']) expect(firstFailure[0]).toContain(`(failMode '${mode}')`);
        expect(logged.length).toBe(events.length + 1);
      } finally {
        await running.stop().catch(() => undefined); // the stop() above reports a hang; here only clean up
        await app.close();
      }
    });

    it('Redis paused (SIGSTOP): the same answers; once the breaker is open only its probes wait on Redis', async () => {
      const { app, store, events, phase, running, replies, watch } = await underLoad();
      try {
        const { pausedAt, openedAt, resumedAt } = await pauseAndResume(
          server,
          { ...watch, resumed: () => events.some((e) => e.state === 'closed') },
          { onPause: () => (phase.feedKey = 'during-pause') },
        );
        await running.stop();
        expect(running.errors).toEqual([]);

        // Fired and answered while Redis was stopped (a probe in flight at SIGCONT gets Redis' answer).
        const during = replies.filter((r) => r.firedAt > pausedAt && r.firedAt + r.ms < resumedAt);
        checkDegraded(during, true);
        measure('Redis paused, from SIGSTOP', during);
        measure('Redis paused, breaker open', during.filter((r) => r.firedAt > openedAt));
        const probes = events.filter((e) => e.state === 'half-open' && e.at > openedAt && e.at < resumedAt).length;
        expect(probes).toBeGreaterThanOrEqual(1);
        expect(store.calls.filter((t) => t > openedAt && t < resumedAt).length).toBe(probes);
        const after = replies.filter((r) => r.firedAt > events.find((e) => e.state === 'closed')!.at && r.route === '/catalog');
        expect(after.length).toBeGreaterThan(0);
        for (const r of after) expect(r.headers['ratelimit-limit']).toBe('1000000');
      } finally {
        await running.stop().catch(() => undefined); // the stop() above reports a hang; here only clean up
        await app.close();
      }
    });
  });
}
