// Three routes of one app (fail open, fail closed, fail local) under a steady load on one RedisStore, through a real kill-and-restart or pause-and-resume, with what each phase must show checked once for every client.
import { createLimiter, RedisStore, type Decision, type Limiter, type Logger, type RedisClient, type StoreErrorEvent } from '@floodgate/core';
import { HEALTHY_DEADLINE_MS, enoughPerRoute, killAndRestart, pauseAndResume, steadyLoad, type FaultWatch, type RedisServer } from '@floodgate/testing';

type Route = 'open' | 'closed' | 'local';
const ROUTES: readonly Route[] = ['open', 'closed', 'local'];
/** The local route's share: a burst of 10 over 2 instances. */
const SHARE = 5;
const quiet: Logger = { warn: () => undefined, error: () => undefined };

/**
 * Runs `fault` ('kill': SIGKILL then restart on the same port; 'pause': SIGSTOP then SIGCONT) on
 * `server` under a steady load of the three routes on `client`, and checks: healthy answers before,
 * each route's failure mode during (the local route exactly its share), limiting back after, and
 * every failure a connection or timeout (none 'other'). Returns the store's health counts.
 */
export async function threeRoutesThrough(fault: 'kill' | 'pause', server: RedisServer, client: RedisClient, prefix: string) {
  const store = new RedisStore({ client, timeoutMs: HEALTHY_DEADLINE_MS });
  const events: StoreErrorEvent[] = [];
  const common = {
    store,
    prefix,
    algorithm: 'fixed-window' as const,
    windowMs: '10m' as const,
    breaker: { failureThreshold: 5, coolDownMs: 200, maxCoolDownMs: 400 },
    onStoreError: (e: StoreErrorEvent) => void events.push(e),
    logger: quiet,
  };
  const limiters: Record<Route, Limiter> = {
    open: createLimiter({ ...common, limit: 1_000_000, failMode: 'open' }),
    closed: createLimiter({ ...common, limit: 1_000_000, failMode: 'closed' }),
    // gcra refilled over an hour: a wall-clock window edge inside the outage cannot hand out a second share.
    local: createLimiter({ ...common, algorithm: 'gcra', windowMs: undefined, burst: 2 * SHARE, refillPerSecond: (2 * SHARE) / 3_600, failMode: 'local', instances: 2 }),
  };
  const phase = { subject: 'before' };
  const shot = (route: Route) => () => {
    const subject = route === 'local' ? phase.subject : 'steady';
    return limiters[route].consume(subject, { scope: route }).then((decision: Decision) => ({ decision, subject }));
  };
  const running = steadyLoad({ open: shot('open'), closed: shot('closed'), local: shot('local') });
  const watch: FaultWatch = {
    enough: (since) => enoughPerRoute(running.samples, ROUTES, since),
    breakerOpen: () => events.some((e) => e.state === 'open'),
    resumed: (since) => running.samples.some((s) => s.firedAt > since && s.route === 'closed' && s.decision.reason === 'allowed'),
  };
  let from: number;
  let to: number;
  // What is checked of the outage is its answers (each route's failure mode, the local share): the
  // outage lasts until every route has enough of them (MIN_SAMPLES, three times the local share),
  // not a fixed 0.6 s or 1 s more; no check here is about the breaker's probes.
  const openMs = 0;
  try {
    if (fault === 'kill') {
      const t = await killAndRestart(server, watch, { openMs, onKill: () => (phase.subject = 'outage'), onRestarted: () => (phase.subject = 'after') });
      [from, to] = [t.downAt, t.restartedAt];
    } else {
      const t = await pauseAndResume(server, watch, { openMs, onPause: () => (phase.subject = 'outage') });
      // A paused Redis is seen when calls pass the deadline: judge the answers once the breaker is open.
      [from, to] = [t.openedAt, t.resumedAt];
      phase.subject = 'after';
    }
  } finally {
    await running.stop();
  }
  expect(running.errors).toEqual([]);
  const before = running.samples.filter((s) => s.subject !== 'outage' && s.firedAt + s.ms < from && s.route !== 'local');
  expect(before.length).toBeGreaterThan(10);
  // Fired and answered inside the outage: a call still in flight when Redis came back may be answered by it.
  const during = running.samples.filter((s) => s.firedAt > from && s.firedAt + s.ms < to);
  const of = (route: Route) => during.filter((s) => s.route === route).map((s) => s.decision);
  for (const route of ROUTES) expect({ route, answers: of(route).length > 0 }).toEqual({ route, answers: true });
  for (const d of of('open')) expect(d).toMatchObject({ allowed: true, reason: 'fail-open', degraded: true });
  for (const d of of('closed')) expect(d).toMatchObject({ allowed: false, reason: 'fail-closed', degraded: true });
  // The outage's subject, from the fault on (a call already on its way may still have been answered):
  // at most its local share, less its units still asked of Redis (issue 49): a paused Redis runs them
  // when it resumes, and a client that times a killed server's calls out rather than failing them at
  // once (GLIDE) keeps them pending too; here the load's calls until the breaker opened, past the burst.
  const local = running.samples.filter((s) => s.route === 'local' && s.subject === 'outage' && s.decision.degraded);
  for (const s of local) expect(s.decision).toMatchObject({ reason: 'fail-local', limit: SHARE });
  expect(local.filter((s) => s.decision.allowed).length).toBeLessThanOrEqual(SHARE);
  expect(running.samples.some((s) => s.firedAt > to && s.route === 'closed' && !s.decision.degraded)).toBe(true);
  const health = limiters.closed.health().stores[0];
  // Every failure was the outage itself: none an ACL refusal, none unexplained.
  expect(health.errors).toMatchObject({ noperm: 0, oom: 0, readonly: 0, other: 0 });
  expect(health.errors.connection + health.errors.timeout).toBeGreaterThan(0);
  return health;
}
