// Failure modes against a real redis-server that the test kills, pauses (SIGSTOP) and restarts.
import {
  createLimiter,
  RedisStore,
  subjectKey,
  type CreateLimiterOptions,
  type Decision,
  type Limiter,
  type Logger,
  type Store,
  type StoreErrorEvent,
} from '@floodgate/core';
import {
  CountingStore,
  HEALTHY_DEADLINE_MS,
  MIN_SAMPLES,
  enoughPerRoute,
  failOnUnhandledErrors,
  killAndRestart,
  latencyStats,
  measurementLog,
  pauseAndResume,
  sleep,
  startRedis,
  steadyLoad,
  waitFor,
  whilePaused,
  type FaultWatch,
  type Fired,
  type RedisServer,
} from '@floodgate/testing';
import type { Redis } from 'ioredis';

interface Answer {
  subject: string;
  decision: Decision;
}
type Sample = Answer & Fired;
type Route = 'open' | 'closed' | 'local';

/** One consume per route every 5 ms, never waiting for answers, like independent clients. */
function load(routes: Record<Route, { limiter: Limiter; subject: () => string }>) {
  const shot = (route: Route) => () => {
    const subject = routes[route].subject();
    return routes[route].limiter.consume(subject, { scope: route }).then((decision): Answer => ({ subject, decision }));
  };
  return steadyLoad({ open: shot('open'), closed: shot('closed'), local: shot('local') });
}

/** Enough answers fired after `t` on every route (a loaded machine fires fewer per second). */
const enough = (samples: Sample[], t: number) => enoughPerRoute(samples, ['open', 'closed', 'local'], t);

const quietLogger = (): Logger & { lines: string[] } => {
  const lines: string[] = [];
  return { lines, warn: (m) => lines.push(`warn ${m}`), error: (m) => lines.push(`error ${m}`) };
};

const measurements = measurementLog();
const measure = (label: string, samples: Sample[]) => measurements.latencies(label, samples);

/** Every key under this prefix has a TTL (PTTL -1 would be a key kept forever). */
async function keysWithoutTtl(client: Redis, prefix: string): Promise<string[]> {
  const bad: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    for (const key of keys) if ((await client.pttl(key)) < 0 && (await client.exists(key))) bad.push(key);
  } while (cursor !== '0');
  return bad;
}

let server: RedisServer;
const clients: Redis[] = [];
failOnUnhandledErrors();

beforeAll(async () => {
  server = await startRedis();
});

afterAll(async () => {
  for (const c of clients) c.disconnect();
  await server?.stop();
});

/** A client as docs/failure-modes.md recommends: no resend of unanswered commands. */
function client(options: Parameters<RedisServer['client']>[0] = {}): Redis {
  const c = server.client({ autoResendUnfulfilledCommands: false, ...options });
  clients.push(c);
  return c;
}

const rnd = () => `t${Math.random().toString(36).slice(2, 10)}`;

/** Three routes of one app on one store: fail open, fail closed, and local with a share of 10 / 2 = 5. */
type TimedEvent = StoreErrorEvent & { at: number };

function threeRoutes(store: Store, events: TimedEvent[], logger: Logger) {
  const prefix = rnd();
  const common: CreateLimiterOptions = {
    store,
    prefix,
    algorithm: 'fixed-window',
    windowMs: '10m',
    breaker: { failureThreshold: 5, coolDownMs: 200, maxCoolDownMs: 400 },
    onStoreError: (e) => events.push({ ...e, at: performance.now() }),
    logger,
  };
  return {
    prefix,
    open: createLimiter({ ...common, limit: 1_000_000, failMode: 'open' }),
    closed: createLimiter({ ...common, limit: 1_000_000, failMode: 'closed' }),
    // gcra with a one-hour refill, not the 10-minute fixed window: an outage can last seconds on a
    // loaded machine, and a wall-clock window edge inside it would legitimately admit a second share.
    local: createLimiter({ ...common, algorithm: 'gcra', windowMs: undefined, burst: 10, refillPerSecond: 10 / 3_600, failMode: 'local', instances: 2 }),
  };
}

/** `share`: what the local route's subject may be admitted locally ('at most': a paused Redis keeps its calls pending, below). */
function checkDegraded(after: Sample[], share: { exactly: number } | { atMost: number } = { exactly: 5 }): void {
  const open = after.filter((s) => s.route === 'open');
  const closed = after.filter((s) => s.route === 'closed');
  const local = after.filter((s) => s.route === 'local');
  for (const list of [open, closed, local]) expect(list.length).toBeGreaterThanOrEqual(MIN_SAMPLES);
  for (const s of open) expect(s.decision).toMatchObject({ allowed: true, reason: 'fail-open', degraded: true, limit: null, remaining: null });
  for (const s of closed) {
    expect(s.decision).toMatchObject({ allowed: false, reason: 'fail-closed', degraded: true, limit: null, remaining: null });
    expect(s.decision.retryAfterMs).toBeGreaterThanOrEqual(1_000);
  }
  // The local route keeps limiting: each subject gets its local share (5 of 10) and no more.
  for (const s of local) expect(s.decision).toMatchObject({ reason: 'fail-local', degraded: true, limit: 5 });
  const admitted = local.filter((s) => s.decision.allowed).length;
  if ('exactly' in share) expect(admitted).toBe(share.exactly);
  else expect(admitted).toBeLessThanOrEqual(share.atMost);
  const denied = local.filter((s) => !s.decision.allowed);
  expect(denied.length).toBe(local.length - admitted);
  for (const s of denied) expect(s.decision.retryAfterMs).toBeGreaterThan(0);
}

/**
 * The three routes under a steady load on a connected client ('before' means healthy), and what the
 * fault choreography watches: the local route's subject can be switched per phase.
 */
async function underLoad() {
  const events: TimedEvent[] = [];
  const logger = quietLogger();
  const c = client();
  await c.ping(); // connected before the load starts, so 'before' means healthy
  const store = new CountingStore(new RedisStore({ client: c, timeoutMs: HEALTHY_DEADLINE_MS }));
  const app = threeRoutes(store, events, logger);
  const phase = { localSubject: 'before' };
  const running = load({
    open: { limiter: app.open, subject: () => 'steady' },
    closed: { limiter: app.closed, subject: () => 'steady' },
    local: { limiter: app.local, subject: () => phase.localSubject },
  });
  const watch: FaultWatch = {
    enough: (since) => enough(running.samples, since),
    breakerOpen: () => events.some((e) => e.state === 'open'),
    resumed: (since) => running.samples.some((s) => s.firedAt > since && s.route === 'closed' && s.decision.reason === 'allowed'),
  };
  return { events, logger, c, store, app, phase, running, watch };
}

it('Redis killed under steady load: open serves, closed refuses with Retry-After, local limits; restarted: limiting resumes', async () => {
  const { events, logger, c, store, app, phase, running, watch } = await underLoad();
  try {
    const { killedAt, restartedAt: restartAt, upAt } = await killAndRestart(server, watch, {
      onKill: () => (phase.localSubject = 'after-kill'),
      onRestarted: () => (phase.localSubject = 'after-restart'),
      settleMs: 200,
    });
    await running.stop();
    expect(running.errors).toEqual([]);

    const before = running.samples.filter((s) => s.firedAt + s.ms < killedAt);
    expect(before.length).toBeGreaterThan(10);
    expect(before.every((s) => !s.decision.degraded)).toBe(true);

    const during = running.samples.filter((s) => s.firedAt > killedAt && s.firedAt < restartAt);
    checkDegraded(during);
    measure('healthy', before);
    measure('kill', during);
    const closedAt = events.find((e) => e.state === 'closed' && e.at > restartAt)!.at;
    measurements.add(`limiting resumed ${(closedAt - upAt).toFixed(0)} ms after redis-server answered PING again`);

    // Each state change reported once (shared breaker, one hook), never once per request.
    const states = events.map((e) => e.state);
    expect(states[0]).toBe('open');
    expect(states[states.length - 1]).toBe('closed');
    for (let i = 1; i < states.length; i++) expect(states[i]).not.toBe(states[i - 1]);
    expect(states.length).toBeLessThan(20);
    // Loud at once: the outage's first failed call logged one line, before the breaker opened,
    // saying what each endpoint now does; then one line per state change.
    const first = logger.lines.filter((l) => l.includes('requests it cannot decide are now'));
    expect(first).toHaveLength(1);
    expect(logger.lines[0]).toBe(first[0]);
    expect(first[0]).toMatch(
      /^error \[floodgate\] store "redis" failed \(.+\): requests it cannot decide are now .+ \(failMode '(open|closed|local)'\)\. Other endpoints on this store: .+\. Logged once until the store answers again\. The circuit opens after 5 failures in a row\.$/,
    );
    for (const mode of ['open', 'closed', 'local']) expect(first[0]).toContain(`(failMode '${mode}')`);
    expect(logger.lines.length).toBe(events.length + 1);

    // Resumed by itself: the store decides again, and still limits.
    const after = running.samples.filter((s) => s.firedAt > restartAt && s.decision.reason !== 'fail-open' && s.decision.reason !== 'fail-closed' && s.decision.reason !== 'fail-local');
    expect(after.length).toBeGreaterThan(0);
    const fresh = createLimiter({ store, prefix: app.prefix, algorithm: 'fixed-window', limit: 3, windowMs: '10m', logger });
    const decisions = [];
    for (let i = 0; i < 4; i++) decisions.push(await fresh.consume('new-subject'));
    expect(decisions.map((d) => d.reason)).toEqual(['allowed', 'allowed', 'allowed', 'limited']);
    expect(decisions[3].degraded).toBe(false);
    // Any request that hung would have failed stop(); none waited anywhere near it.
    expect(latencyStats(running.samples.map((s) => s.ms)).worst).toBeLessThan(5_000);
    expect(await keysWithoutTtl(c, app.prefix)).toEqual([]);
  } finally {
    await running.stop().catch(() => undefined);
  }
});

it('Redis paused (SIGSTOP): the same answers, and once the breaker is open only probes wait on the store', async () => {
  const { events, c, store, app, phase, running, watch } = await underLoad();
  try {
    const { pausedAt, openedAt, resumedAt } = await pauseAndResume(
      server,
      {
        ...watch,
        // Resumed once a probe went out (half-open) while paused: on a starved machine the breaker's
        // cool-down timer can fire after the 1 s the pause lasts at least, so wait for it, not the clock.
        enough: (openedAt) => watch.enough(openedAt) && events.some((e) => e.state === 'half-open' && e.at > openedAt),
        resumed: () => events.some((e) => e.state === 'closed'),
      },
      { onPause: () => (phase.localSubject = 'after-pause') },
    );
    await running.stop();
    expect(running.errors).toEqual([]);

    // Fired and answered while Redis was stopped (a probe in flight at SIGCONT gets Redis' answer).
    const during = running.samples.filter((s) => s.firedAt > pausedAt && s.firedAt + s.ms < resumedAt);
    // Paused, the subject's calls sent until the breaker opened stay pending in Redis, which runs them
    // when it resumes: they come off its local share first (issue 49; the steady load sends more than it).
    checkDegraded(during, { atMost: 5 });
    measure('pause', during);
    measure('pause, breaker open', during.filter((s) => s.firedAt > openedAt));

    // While open, the store saw one call per probe and nothing else: no request waited on the
    // hung Redis except the probe (and each probe waited at most the store's timeout).
    const probes = events.filter((e) => e.state === 'half-open' && e.at > openedAt && e.at < resumedAt).length;
    expect(probes).toBeGreaterThanOrEqual(1);
    const callsWhileOpen = store.calls.filter((t) => t > openedAt && t < resumedAt).length;
    expect(callsWhileOpen).toBe(probes);
    const timeouts = events.filter((e) => e.state === 'open').map((e) => (e.error as Error).message);
    expect(timeouts.every((m) => new RegExp(`did not answer within ${HEALTHY_DEADLINE_MS} ms`).test(m))).toBe(true);
    expect(latencyStats(during.map((s) => s.ms)).worst).toBeLessThan(5_000);
    // SIGSTOP may land in the middle of a script: it finishes on SIGCONT, expiry included.
    expect(await keysWithoutTtl(c, app.prefix)).toEqual([]);
  } finally {
    await running.stop().catch(() => undefined);
  }
});

it('a timed-out call is never sent again: queued scripts run once on resume, and the count matches the calls sent', async () => {
  const prefix = rnd();
  const c = client();
  // One call per request (no coalescing), so calls sent and scripts run can be matched one to one.
  const store = new CountingStore(new RedisStore({ client: c, coalesce: false }));
  const limiter = createLimiter({
    store,
    prefix,
    algorithm: 'fixed-window',
    limit: 1_000,
    windowMs: '10m',
    breaker: { failureThreshold: 5, coolDownMs: 150 },
    logger: quietLogger(),
  });
  const key = `${subjectKey(prefix, '', 'victim')}:default.fw`;
  // The first call connects and loads the script: on a loaded machine it can outlast the default
  // 100 ms deadline, so warm up until one call is answered in time (a late one still counts once).
  await waitFor('a call answered in time', async () => (await limiter.consume('victim')).reason === 'allowed', 30_000);
  await c.ping(); // every warm-up script has run: Redis answers in order
  const before = Number(await c.hget(key, 'c'));
  const callsBefore = store.calls.length;
  await server.resetStats();
  await whilePaused(server, async (resume) => {
    const decisions: Decision[] = [];
    const t0 = performance.now();
    while (performance.now() - t0 < 800) {
      decisions.push(...(await Promise.all([limiter.consume('victim'), limiter.consume('victim'), limiter.consume('victim')])));
      await sleep(5);
    }
    expect(decisions.every((d) => d.reason === 'fail-local')).toBe(true);
    const sent = store.calls.length - callsBefore; // minus the calls before the pause
    expect(sent).toBeGreaterThanOrEqual(5);
    expect(sent).toBeLessThan(decisions.length); // the breaker held most requests back
    resume();
    // The scripts Redis received while stopped run now, once each; wait until the count settles.
    await waitFor('the queued scripts to run', async () => Number(await c.hget(key, 'c')) >= before + sent, 5_000);
    // An event, not a sleep: Redis answers a connection in order, so once two PINGs sent after the
    // last script came back, anything Floodgate wrote in answer to the scripts' replies has run too.
    await c.ping();
    await c.ping();
    const counted = Number(await c.hget(key, 'c'));
    const commands = await server.commandStats();
    // Each request counted at most once, and Floodgate never re-sent: one EVALSHA per call, no EVAL.
    expect(counted).toBe(before + sent);
    expect(commands.evalsha).toBe(sent);
    expect(commands.eval ?? 0).toBe(0);
    expect(await c.pttl(key)).toBeGreaterThan(0);
  });
});

it('a timed-out call resent by ioredis after a restart is not followed by an EVAL (no late count)', async () => {
  // The client ioredis gives by default: it resends unanswered commands after reconnecting, and
  // here never gives up on them. Floodgate warns about it; the resend reaches a Redis without the
  // script (NOSCRIPT), and the NOSCRIPT fallback must not run for a call that already timed out.
  const prefix = rnd();
  const logger = quietLogger();
  const c = client({ autoResendUnfulfilledCommands: true, maxRetriesPerRequest: null });
  const store = new CountingStore(new RedisStore({ client: c, coalesce: false }));
  const limiter = createLimiter({ store, prefix, limit: 1_000, windowMs: '10m', breaker: { failureThreshold: 1_000 }, logger });
  expect(logger.lines.some((l) => /autoResendUnfulfilledCommands/.test(l))).toBe(true);
  // Connected and the script loaded: the first call can outlast the 100 ms deadline on a loaded
  // machine, so wait for one answered in time (Redis answers in order: the late ones are answered too).
  await waitFor('a call answered in time', async () => (await limiter.consume('other')).reason === 'allowed', 30_000);
  await whilePaused(server, async () => {
    const decisions = await Promise.all(Array.from({ length: 10 }, () => limiter.consume('victim')));
    expect(decisions.every((d) => d.reason === 'fail-local')).toBe(true);
    await server.kill(); // the 10 EVALSHA calls were written to the socket, never answered
  });
  await server.restart();
  await waitFor('ioredis to reconnect', () => c.status === 'ready');
  await waitFor('the resent calls to reach Redis', async () => ((await server.commandStats()).evalsha ?? 0) >= 10, 5_000);
  // Two round trips on the same connection: an EVAL Floodgate would send in answer to a NOSCRIPT
  // reply goes out before the second PING, and Redis answers in order.
  await c.ping();
  await c.ping();
  const commands = await server.commandStats();
  expect(commands.evalsha).toBe(10); // resent by ioredis, answered NOSCRIPT
  expect(commands.eval ?? 0).toBe(0); // and Floodgate did not follow up
  expect(await c.exists(`${subjectKey(prefix, '', 'victim')}:default.swc`)).toBe(0);
});

it('a script that fails while it runs (OOM) leaves every key with its TTL, for every algorithm', async () => {
  const oom = await startRedis({ args: ['--maxmemory-policy', 'noeviction'] });
  const c = oom.client({ autoResendUnfulfilledCommands: false });
  try {
    const prefix = rnd();
    const algorithms = ['fixed-window', 'sliding-window-log', 'sliding-window-counter', 'token-bucket', 'gcra'] as const;
    const events: StoreErrorEvent[] = [];
    const limiters = algorithms.map((algorithm) =>
      createLimiter({
        store: new RedisStore({ client: c, timeoutMs: 30_000 }),
        prefix,
        algorithm,
        limit: 50,
        windowMs: '10m',
        failMode: 'local',
        breaker: { failureThreshold: 1_000 },
        onStoreError: (e) => events.push(e),
        logger: quietLogger(),
      }),
    );
    for (const limiter of limiters) for (let i = 0; i < 3; i++) expect((await limiter.consume(`s${i}`, { cost: 2 })).reason).toBe('allowed');
    // Past maxmemory, a script's first write fails inside the script (Redis checks OOM there).
    await c.config('SET', 'maxmemory', '1'); // far below what an empty Redis already uses
    const failed: Decision[] = [];
    for (const limiter of limiters) {
      for (let i = 0; i < 5; i++) failed.push(await limiter.consume(`s${i}`, { cost: 2 }));
    }
    // Redis refuses a script's first denyoom write (HSET, SET): fixed-window, sliding-window-counter,
    // token-bucket and gcra fail inside the script. sliding-window-log's first write (ZREMRANGEBYSCORE)
    // is not denyoom, and once a script has written Redis lets it finish: its calls may succeed.
    for (const d of failed) expect(['fail-local', 'allowed']).toContain(d.reason);
    expect(failed.filter((d) => d.reason === 'fail-local').length).toBeGreaterThanOrEqual(20);
    expect(events.some((e) => e.state === 'open')).toBe(false); // threshold 1000: every call reached the script
    expect(await keysWithoutTtl(c, prefix)).toEqual([]);
    // The counts are exactly what the store admitted: a failed script wrote nothing.
    await c.config('SET', 'maxmemory', '0');
    for (const [i, limiter] of limiters.entries()) {
      const s0 = failed[i * 5];
      expect((await limiter.peek('s0', { cost: 0 })).remaining).toBe(50 - 2 - (s0.reason === 'allowed' ? 2 : 0));
    }
  } finally {
    c.disconnect();
    await oom.stop();
  }
});

it('an app that starts while Redis is down answers at once, degraded, and starts limiting when Redis comes up', async () => {
  const down = await startRedis();
  await down.kill();
  const c = down.client({ autoResendUnfulfilledCommands: false });
  try {
    const events: StoreErrorEvent[] = [];
    const limiter = createLimiter({
      store: new RedisStore({ client: c }),
      prefix: rnd(),
      algorithm: 'fixed-window',
      limit: 2,
      windowMs: '10m',
      failMode: 'closed',
      breaker: { failureThreshold: 3, coolDownMs: 100, maxCoolDownMs: 200 },
      onStoreError: (e) => events.push(e),
      logger: quietLogger(),
    });
    const early: { ms: number; d: Decision }[] = [];
    for (let i = 0; i < 20; i++) {
      const t0 = performance.now();
      const d = await limiter.consume('u');
      early.push({ ms: performance.now() - t0, d });
      await sleep(5);
    }
    expect(early.every((x) => x.d.reason === 'fail-closed')).toBe(true);
    expect(latencyStats(early.map((x) => x.ms)).worst).toBeLessThan(5_000); // a hang guard, not a speed check
    measurements.add(`start with Redis down (closed): ${JSON.stringify(latencyStats(early.map((x) => Number(x.ms.toFixed(2)))))}`);
    expect(events[0].state).toBe('open');
    await down.restart();
    // ioredis reconnects on its own schedule; then the next probe closes the breaker.
    await waitFor('limiting to start', async () => (await limiter.consume('probe')).reason !== 'fail-closed');
    expect((await limiter.consume('v')).reason).toBe('allowed');
    expect((await limiter.consume('v')).reason).toBe('allowed');
    expect((await limiter.consume('v')).reason).toBe('limited');
    expect(events[events.length - 1].state).toBe('closed');
  } finally {
    c.disconnect();
    await down.stop();
  }
});
