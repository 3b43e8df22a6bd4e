// The chaos soak: steady load through Express, Fastify and Koa on one real redis-server killed, paused, restarted and slowed at random (seeded), with floods of one hot caller and of many fresh callers between, and its invariants checked.
import { Agent, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext, runInThisContext } from 'node:vm';
import { RedisStore, type FailMode, type Logger } from '@floodgate/core';
import { rateLimit as expressRateLimit } from '@floodgate/express';
import { rateLimit as fastifyRateLimit } from '@floodgate/fastify';
import { rateLimit as koaRateLimit } from '@floodgate/koa';
import { prng, sleep, startRedis, steadyLoad, waitFor, type RedisServer } from '@floodgate/testing';
import express from 'express';
import fastify from 'fastify';
import Koa from 'koa';
import type { Redis } from 'ioredis';
import { DEADLINE_MARGIN_MS, overAdmissionBound, UNLEARNED_SHARE } from './bounds';
import { LoopWatch } from './loop-watch';

export { DEADLINE_MARGIN_MS } from './bounds';

/** The heap in MB that survives a full collection (gc exposed at run time when node was not started with --expose-gc). */
function retainedHeapMb(): number {
  let gc = (globalThis as { gc?: () => void }).gc;
  if (typeof gc !== 'function') {
    setFlagsFromString('--expose-gc');
    gc = runInNewContext('gc') as () => void;
  }
  gc();
  return process.memoryUsage().heapUsed / 2 ** 20;
}

/** The store deadline every decision must keep (RedisStore `timeoutMs`; Floodgate's default). */
export const STORE_TIMEOUT_MS = 100;
/**
 * Limit per fixed window of every route. The steady load comes from 127.0.0.1 (one subject per
 * route); a flood's requests name their caller in CALLER_HEADER (the routes' `key`).
 */
export const LIMIT = 20;
export const WINDOW_MS = 1_000;
/** `failMode: 'local'` shares: each instance admits LIMIT / INSTANCES from memory while Redis is out. Also the hot-key routes' instances. */
export const INSTANCES = 2;
/** Header a flood's requests name their caller in; without it the caller is the client IP. */
export const CALLER_HEADER = 'x-caller';
/**
 * - open, closed, local: the failure modes by name.
 * - default: no failure option at all (what an app that sets none gets).
 * - hot: default failure options with hot-key mode on (`hotKeys: { instances: INSTANCES, threshold: HOT_THRESHOLD }`).
 */
export type SoakRoute = FailMode | 'default' | 'hot';
const ROUTES: readonly SoakRoute[] = ['open', 'closed', 'local'];
const OVERLOAD_ROUTES: readonly SoakRoute[] = ['default', 'hot'];
/**
 * The 'default' and 'hot' routes' limit per window: below the steady load's 33 requests per window,
 * so that during every fault the steady caller alone tests what the default failure behaviour
 * admits (a flood on one loaded machine, in the same process as the apps, cannot send much more).
 */
export const OVERLOAD_LIMIT = 5;
const limitOf = (route: SoakRoute) => (route === 'default' || route === 'hot' ? OVERLOAD_LIMIT : LIMIT);
/** Requests per second one instance must see for a subject before it leases quota for it: a flood's hot caller is, the steady load is not. */
export const HOT_THRESHOLD = 50;
export const FAULT_KINDS = ['kill', 'pause', 'slow'] as const;
/**
 * Floods: one hot caller, or a fresh caller per request, FLOOD_IN_FLIGHT requests in flight all
 * along, on the routes that keep a limit; and the autoscaler's case (issue 49, 'flood-scale-out'):
 * Redis paused, a new Express instance on a connection of its own (it has counted no fleet) starts
 * during the pause and a hot caller floods its default route and the first one's.
 */
export const FLOOD_KINDS = ['flood-hot', 'flood-fresh', 'flood-scale-out'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number] | (typeof FLOOD_KINDS)[number];
export const FLOOD_IN_FLIGHT = 24;
/** Routes a flood is aimed at: every route that keeps a limit ('open' admits everything while the store is away by design). */
const FLOOD_ROUTES: readonly SoakRoute[] = ['closed', 'local', 'default', 'hot'];
/** The steady load runs this long before its answers are judged and the first fault: the first second of a loaded machine is JIT and connection setup. */
const WARM_UP_MS = 1_500;
/** Issue 24: a fail-closed route serves from the store again within this long of the store answering. */
export const RECOVERY_MS = 1_000;
/** Scans for keys to check for a TTL, 100 ms apart, until one finds some: 10 s while the load runs. */
const KEY_SCAN_PASSES = 100;

/**
 * The most one caller may be admitted on a route in one window: its limit plus the documented
 * over-admission bound (src/bounds.ts, the one place it is set). One soak process is one
 * instance: the 'local' route is told INSTANCES (its local share is LIMIT / INSTANCES), the others
 * set no `instances` and have the fleet of one they run in.
 */
export function admissionCeiling(route: SoakRoute, restartsInWindow = 0, joinedInWindow = 0): number {
  const limit = limitOf(route);
  // A redis-server restarted without its data (the soak's: no RDB, no AOF) forgets what it had
  // admitted in the window: it may admit the limit again, once per restart within the window
  // (docs/failure-modes.md#the-bound-on-over-admission, its row for a restart without data).
  // An instance started during an outage has counted no fleet: 1 unit per subject (issue 49; it was the whole limit).
  return limit * (1 + restartsInWindow) + overAdmissionBound(limit, route === 'local' ? INSTANCES : 1, joinedInWindow);
}

/** The autoscaler phase's caller (its windows are judged against scaleOutCeiling). */
const SCALE_OUT_CALLER = 'scale-out-';

/**
 * The autoscaler phase's bound for its caller (issue 49): the running instance heard from Redis
 * that the caller had used its limit (it denies it, from the block cache or what Redis said was
 * left), and each instance started during the pause has counted no fleet (1 unit per subject). So:
 * the limit (Redis, and the running instance in a window Redis said nothing of the caller) plus 1
 * unit per joined instance. Before issue 49 the joined instance alone gave the whole limit.
 */
export function scaleOutCeiling(route: SoakRoute, restartsInWindow: number, joinedInWindow: number): number {
  return limitOf(route) * (1 + restartsInWindow) + joinedInWindow * UNLEARNED_SHARE;
}

export interface SoakOptions {
  durationMs: number;
  /** Seeds the faults' order, kinds and lengths. */
  seed: number;
  /** One request to every route of every app every `everyMs` (9 routes). Default 30 ms (300 requests/s). */
  everyMs?: number;
  /** Progress lines. Default none. */
  log?: (line: string) => void;
  /**
   * Issue 24's overload phases and checks: the 'default' and 'hot' routes, floods (one hot caller,
   * many fresh callers) beside the faults, and fail-closed routes back within RECOVERY_MS of the
   * store answering. Default true (`pnpm soak`). The per-caller admission ceiling and the deadline
   * are checked on every route either way.
   */
  overload?: boolean;
  /**
   * Requests each flood keeps in flight. Default FLOOD_IN_FLIGHT (24, `pnpm soak`). The flood runs
   * in the soak's own process, beside the apps it floods: on a loaded machine its own work delays
   * every answer in that process without stopping the loop (so the stall allowance cannot see it),
   * and `pnpm test`'s short soak, run beside the other suites, uses fewer.
   */
  floodInFlight?: number;
  /**
   * Milliseconds of latency allowed past the strict bounds: each answer's deadline (store deadline
   * + DEADLINE_MARGIN_MS + its loop's stall) and the closed routes' recovery (RECOVERY_MS). Default 0
   * (`pnpm soak`: the strict bounds). `pnpm test`'s short soak runs beside other suites on a loaded
   * machine, where every process can stand still at once (loop stall allowance included: another
   * process holds the core), so it passes a few seconds: still "never a hang", while every
   * count-based invariant (admissions per window, failMode answers, TTLs) stays strict.
   */
  latencyAllowanceMs?: number;
}

export interface SoakReport {
  seed: number;
  durationMs: number;
  requests: number;
  byOutcome: Record<string, number>;
  /** Faults by kind, restarts, and how many kill / pause / slow faults a hot caller flooded through. */
  faults: Record<FaultKind | 'restart' | 'floodsDuringFaults', number>;
  overload: boolean;
  /** The first 100 violations, in full. */
  violations: string[];
  violationCount: number;
  /** Slowest response, and the most any response exceeded the deadline after the loop's stall. */
  worstMs: number;
  worstOverDeadlineMs: number;
  /** Responses later than deadline + 50 ms counting the loop's stalls against them (not violations: see DEADLINE_MARGIN_MS). */
  lateWithoutStallAllowance: number;
  worstLoopStallMs: number;
  healthyWindowsChecked: number;
  /** Caller windows judged against admissionCeiling (every route but 'open', every window, faults and floods included), and the most admitted in one. */
  callerWindowsChecked: number;
  worstAdmittedInWindow: { key: string; admitted: number; ceiling: number } | null;
  /** The autoscaler phase's caller: the most admitted in one window, and its ceiling (scaleOutCeiling); null when it did not run. */
  worstScaleOut: { key: string; admitted: number; ceiling: number } | null;
  /** Requests the floods sent. */
  floodRequests: number;
  /** Requests each flood kept in flight. */
  floodInFlight: number;
  /** The latencyAllowanceMs the run was judged with (0: the strict bounds). */
  latencyAllowanceMs: number;
  /** ms from Redis answering again to every closed route serving from the store, worst of all faults. */
  worstRecoveryMs: number;
  heapStartMb: number;
  heapEndMb: number;
  keysChecked: number;
  logLines: number;
  firstFailureLines: number;
}

interface App {
  name: string;
  port: number;
  close(): Promise<void>;
}

/** The caller a request names (floods), else undefined: the adapter's default identity (the client IP). */
const callerKey = (request: { headers: Record<string, string | string[] | undefined> }) => {
  const caller = request.headers[CALLER_HEADER];
  return typeof caller === 'string' ? caller : undefined;
};

function options(store: RedisStore, prefix: string, logger: Logger) {
  return { store, prefix, logger, algorithm: 'fixed-window' as const, limit: LIMIT, windowMs: WINDOW_MS, retryAfterJitterMs: 0, key: callerKey };
}
function perRoute(route: SoakRoute) {
  if (route === 'default') return { limit: OVERLOAD_LIMIT };
  if (route === 'hot') return { limit: OVERLOAD_LIMIT, hotKeys: { instances: INSTANCES, threshold: HOT_THRESHOLD } };
  return { failMode: route, ...(route === 'local' ? { instances: INSTANCES } : {}) };
}
const closeServer = (server: Server) =>
  new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });

/** Three apps, one per adapter, each with a route per entry of `routes` (/open, /closed, /local, ...) on the one store. */
async function startApps(store: RedisStore, prefix: string, logger: Logger, routes: readonly SoakRoute[]): Promise<App[]> {
  const e = express();
  for (const mode of routes) e.get(`/${mode}`, expressRateLimit({ ...options(store, `${prefix}e`, logger), ...perRoute(mode) }), (_req, res) => void res.send('ok'));
  const eServer = e.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => eServer.once('listening', resolve));

  const f = fastify({ logger: false });
  await f.register(fastifyRateLimit, options(store, `${prefix}f`, logger));
  for (const mode of routes) f.get(`/${mode}`, { config: { rateLimit: perRoute(mode) } }, async () => 'ok');
  await f.listen({ port: 0, host: '127.0.0.1' });

  const k = new Koa();
  // Koa has no route patterns (no router): each route's limiter gets a prefix of its own, else they would share one bucket.
  const koaRoutes = new Map(routes.map((mode) => [`/${mode}`, koaRateLimit({ ...options(store, `${prefix}k-${mode}`, logger), ...perRoute(mode) })]));
  k.use(async (ctx, next) => {
    const limiter = koaRoutes.get(ctx.path);
    if (!limiter) return next();
    await limiter(ctx, async () => {
      ctx.body = 'ok';
    });
  });
  const kServer = k.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => kServer.once('listening', resolve));
  // Longer than any soak: the load's keep-alive sockets are never closed under it by the server
  // (a socket reused just as the server times it out fails with ECONNRESET, a client-side race, not a limiter's answer).
  for (const server of [eServer, f.server, kServer]) server.keepAliveTimeout = 10 * 60_000;

  return [
    { name: 'express', port: (eServer.address() as AddressInfo).port, close: () => closeServer(eServer) },
    { name: 'fastify', port: (f.server.address() as AddressInfo).port, close: () => f.close() },
    { name: 'koa', port: (kServer.address() as AddressInfo).port, close: () => closeServer(kServer) },
  ];
}

/** The autoscaler phase's new instance: an Express app with the 'default' route alone, on its own store and connection. */
async function startJoined(store: RedisStore, prefix: string, logger: Logger): Promise<App> {
  const e = express();
  e.get('/default', expressRateLimit({ ...options(store, prefix, logger), ...perRoute('default') }), (_req, res) => void res.send('ok'));
  const server = e.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  server.keepAliveTimeout = 10 * 60_000;
  return { name: 'express', port: (server.address() as AddressInfo).port, close: () => closeServer(server) };
}

interface Answer {
  status: number;
  limit: string | undefined;
}

function get(agent: Agent, port: number, path: string, caller?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers = caller === undefined ? undefined : { [CALLER_HEADER]: caller };
    const req = httpRequest({ host: '127.0.0.1', port, path, method: 'GET', agent, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, limit: res.headers['ratelimit-limit'] as string | undefined }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * What one answer was, from the outside: the store's word carries the limit in its headers; a
 * degraded one carries none (no made-up quota), so a 200 without them was admitted by a failure mode.
 */
function outcome(route: SoakRoute, a: Answer): string {
  const fromStore = a.limit === String(limitOf(route));
  if (a.limit !== undefined && !fromStore) return 'odd';
  if (a.status === 200) return fromStore ? 'store-admitted' : `fail-${route}-admitted`;
  if (a.status === 429) return fromStore ? 'store-limited' : `fail-${route}-limited`;
  if (a.status === 503 && !fromStore) return `fail-${route}-refused`;
  return `status-${a.status}`;
}

/** One answer with where it went and when: the steady load's and the floods' alike. */
interface Sample extends Answer {
  route: string;
  /** The caller the request named; undefined for the steady load (the client IP). */
  caller?: string;
  firedAt: number;
  ms: number;
}

/**
 * Keeps `inFlight` requests in flight until `until` (performance.now()), each to the next of
 * `targets` in turn, from `caller(i)`; every answer goes to `samples`, every failure to `errors`.
 */
async function flood(
  agent: Agent,
  targets: readonly { route: string; port: number; path: string }[],
  caller: (i: number) => string,
  inFlight: number,
  until: number,
  samples: Sample[],
  errors: unknown[],
  /** Requests each lane sends even past `until`: a phase that must have answers to judge (a stall can outlast a short phase). */
  minPerLane = 0,
): Promise<number> {
  let sent = 0;
  const lane = async () => {
    for (let mine = 0; performance.now() < until || mine < minPerLane; mine++) {
      const i = sent++;
      const target = targets[i % targets.length];
      const who = caller(i);
      const firedAt = performance.now();
      try {
        const answer = await get(agent, target.port, target.path, who);
        samples.push({ ...answer, route: target.route, caller: who, firedAt, ms: performance.now() - firedAt });
      } catch (error) {
        errors.push(error);
      }
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return sent;
}

export async function runSoak(opts: SoakOptions): Promise<SoakReport> {
  const log = opts.log ?? (() => undefined);
  const overload = opts.overload ?? true;
  const allowanceMs = opts.latencyAllowanceMs ?? 0;
  const routes = overload ? [...ROUTES, ...OVERLOAD_ROUTES] : ROUTES;
  const kinds: readonly FaultKind[] = overload ? [...FAULT_KINDS, ...FLOOD_KINDS] : FAULT_KINDS;
  const rnd = prng(opts.seed).next;
  const violations: string[] = [];
  let violationCount = 0;
  const violate = (v: string) => {
    // Keep the first hundred in full; count them all.
    violationCount++;
    if (violations.length < 100) violations.push(v);
  };
  // jest hands a test a copy of `process`: listen on the real one, as failOnUnhandledErrors does.
  const host = runInThisContext('process') as NodeJS.Process;
  const onUnhandled = (reason: unknown) => violate(`unhandled: ${reason instanceof Error ? reason.stack : String(reason)}`);
  host.on('unhandledRejection', onUnhandled);
  host.on('uncaughtException', onUnhandled);

  const server: RedisServer = await startRedis({ args: ['--enable-debug-command', 'yes'] });
  const clients: Redis[] = [];
  const lines: string[] = [];
  const logger: Logger = { warn: (m) => void lines.push(m), error: (m) => void lines.push(m) };
  // Enough sockets that no request waits in the agent for one (that wait would be the client's, not Floodgate's).
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  const floodInFlight = opts.floodInFlight ?? FLOOD_IN_FLIGHT;
  const floodAgent = new Agent({ keepAlive: true, maxSockets: floodInFlight });
  const loop = new LoopWatch();
  const faults: SoakReport['faults'] = { kill: 0, pause: 0, slow: 0, 'flood-hot': 0, 'flood-fresh': 0, 'flood-scale-out': 0, restart: 0, floodsDuringFaults: 0 };
  const byOutcome: Record<string, number> = {};
  // Store admissions per route and caller per window (the healthy-window check), and every admission (the ceiling).
  const windows = new Map<string, number>();
  const admittedWindows = new Map<string, number>();
  // [from, to] (performance.now()) from each fault's start until limiting was seen again: no window overlapping one is judged.
  const unhealthy: [number, number][] = [];
  /** Each kill and the restart after it (ms since the time origin, as `unhealthy`): the data the server lost. */
  const restarts: [number, number][] = [];
  /** Each autoscaler phase's span, while its new instance ran (as `restarts`): the joined instance's unlearned share counts in the windows it touches. */
  const joins: [number, number][] = [];
  let requests = 0;
  let floodRequests = 0;
  let worstMs = 0;
  let worstOver = -Infinity;
  let lateStrict = 0;
  let worstRecoveryMs = 0;
  let heapStart = 0;
  let heapEnd = 0;
  // After a fault: the first answer from the store on each closed route once the store answered again.
  let recoverySince = Infinity;
  const recovered = new Map<string, number>();
  const prefix = `soak${opts.seed}x`;
  let apps: App[] = [];
  let load: ReturnType<typeof steadyLoad<Answer>> | undefined;
  const floodSamples: Sample[] = [];
  const floodErrors: unknown[] = [];
  try {
    const client = server.client({ autoResendUnfulfilledCommands: false });
    client.on('error', () => undefined); // expected: the soak kills this server on purpose
    const slower = server.client({ commandTimeout: 10_000 });
    clients.push(client, slower);
    await client.ping();
    const store = new RedisStore({ client, timeoutMs: STORE_TIMEOUT_MS });
    apps = await startApps(store, prefix, logger, routes);

    const shots: Record<string, () => Promise<Answer>> = {};
    for (const app of apps) for (const route of routes) shots[`${app.name} ${route}`] = () => get(agent, app.port, `/${route}`);
    // Warm-up, not judged: each route's first requests compile its code paths and open its sockets,
    // on a loaded machine with stalls of a second; then the steady load a while, its answers dropped.
    for (let i = 0; i < 3; i++) await Promise.all(Object.values(shots).map((shot) => shot()));
    const soakStart = performance.now();
    load = steadyLoad(shots, opts.everyMs ?? 30);
    const running = load;
    await sleep(WARM_UP_MS);

    const targetsOn = (names: readonly SoakRoute[]) =>
      apps.flatMap((app) => names.filter((r) => routes.includes(r)).map((r) => ({ route: `${app.name} ${r}`, port: app.port, path: `/${r}` })));
    const floodTargets = targetsOn(FLOOD_ROUTES);
    // Through a fault, the flood aims at the routes on default failure options: what the defaults do for an attacker's moment.
    const duringTargets = targetsOn(['default', 'hot']);

    /**
     * The autoscaler's case: a hot caller first uses its limit on the first Express app's default
     * route while Redis answers (that instance hears so), then Redis is paused, a new Express app
     * (the 'default' route, the first app's prefix, a connection of its own: it has counted no
     * fleet) starts, and the caller floods both, judged as 'express default' (one shared limit):
     * at most the limit plus 1 unit per window (scaleOutCeiling), where before issue 49 the new
     * instance alone gave the whole limit.
     */
    const scaleOut = async (n: number, lengthMs: number): Promise<number> => {
      const caller = () => `${SCALE_OUT_CALLER}${n}`;
      const express = apps.find((a) => a.name === 'express')!;
      const first = { route: 'express default', port: express.port, path: '/default' };
      // At least 3 requests a lane in each phase: at load 25 a 200 ms phase, or a pause that starting
      // the joined app outlasted, sent nothing, and the autoscaler's case was never judged.
      let sent = await flood(floodAgent, [first], caller, floodInFlight, performance.now() + 200, floodSamples, floodErrors, 3);
      const joinedAt = performance.now();
      server.pause();
      const joinedClient = server.client({ autoResendUnfulfilledCommands: false });
      joinedClient.on('error', () => undefined);
      clients.push(joinedClient);
      try {
        const joined = await startJoined(new RedisStore({ client: joinedClient }), `${prefix}e`, logger);
        try {
          const targets = [first, { route: 'express default', port: joined.port, path: '/default' }];
          sent += await flood(floodAgent, targets, caller, floodInFlight, joinedAt + lengthMs, floodSamples, floodErrors, 3);
        } finally {
          await joined.close();
        }
      } finally {
        server.resume();
        joinedClient.disconnect();
        joins.push([joinedAt, performance.now()]);
        // A pause, as the others: no window it touched is judged as healthy.
        unhealthy.push([joinedAt, performance.now()]);
      }
      return sent;
    };

    const origin = performance.timeOrigin;
    const judgeOne = (s: Sample) => {
      requests++;
      const [adapter, route] = s.route.split(' ') as [string, SoakRoute];
      const kind = outcome(route, s);
      byOutcome[kind] = (byOutcome[kind] ?? 0) + 1;
      const answeredAt = s.firedAt + s.ms;
      worstMs = Math.max(worstMs, s.ms);
      const over = s.ms - STORE_TIMEOUT_MS - DEADLINE_MARGIN_MS;
      if (over > 0) lateStrict++;
      const stalled = loop.stalledWithin(s.firedAt, answeredAt);
      const excess = over - stalled;
      worstOver = Math.max(worstOver, excess);
      if (excess > allowanceMs) {
        violate(
          `${s.route}${s.caller ? ` (${s.caller})` : ''}: ${kind} in ${s.ms.toFixed(0)} ms, ${((s.firedAt - soakStart) / 1000).toFixed(1)} s in, past ${STORE_TIMEOUT_MS} + ${DEADLINE_MARGIN_MS} ms plus the loop's stall (${stalled.toFixed(0)} ms)${allowanceMs ? ` plus the allowance (${allowanceMs} ms)` : ''}`,
        );
      }
      // Each route answers only as its failMode allows: closed never admits without the store, open never refuses.
      // The default and hot routes answer as whatever the defaults are: the admission ceiling judges them.
      const named: Partial<Record<SoakRoute, string[]>> = {
        open: ['fail-open-admitted'],
        closed: ['fail-closed-refused'],
        local: ['fail-local-admitted', 'fail-local-limited'],
      };
      const allowed = ['store-admitted', 'store-limited', ...(named[route] ?? [`fail-${route}-admitted`, `fail-${route}-limited`, `fail-${route}-refused`])];
      if (!allowed.includes(kind)) violate(`${s.route}: ${kind} (status ${s.status}, RateLimit-Limit ${s.limit ?? 'none'})`);
      if ((kind === 'store-admitted' || kind === 'store-limited') && route === 'closed' && answeredAt > recoverySince && !recovered.has(adapter)) {
        recovered.set(adapter, answeredAt);
      }
      if (s.status !== 200) return;
      // The window the request was decided in, when the whole request lies inside one (Redis TIME and this clock are the host's; 5 ms of slack each side).
      const from = Math.floor((origin + s.firedAt - 5) / WINDOW_MS);
      const to = Math.floor((origin + answeredAt + 5) / WINDOW_MS);
      if (from !== to) return;
      const key = `${adapter} ${route} ${s.caller ?? 'ip'} ${from}`;
      if (route !== 'open') admittedWindows.set(key, (admittedWindows.get(key) ?? 0) + 1);
      if (kind === 'store-admitted') windows.set(key, (windows.get(key) ?? 0) + 1);
    };
    // Drained as they come, so a run of any length keeps no answers.
    // Answers to requests fired in the warm-up are not judged, however late they come.
    const judgeFrom = soakStart + WARM_UP_MS;
    const judge = () => {
      for (const s of running.samples.splice(0)) if (s.firedAt >= judgeFrom) judgeOne(s);
      for (const s of floodSamples.splice(0)) judgeOne(s);
    };
    const judging = setInterval(judge, 200);
    heapStart = retainedHeapMb();
    let keysChecked = 0;
    try {
      const start = performance.now();
      const end = soakStart + opts.durationMs;
      // Every kind once per round, in a seeded order: a short run still sees each.
      let round: FaultKind[] = [];
      // Until the end, and in any case until each kind has struck once (a loaded machine runs a short soak slowly).
      const more = (leftMs: number) => performance.now() < end - leftMs || kinds.some((k) => faults[k] === 0);
      while (more(2_500)) {
        await sleep(800 + rnd() * 1_200);
        if (!more(2_000)) break;
        if (round.length === 0) round = [...kinds].sort(() => rnd() - 0.5);
        const kind = round.shift()!;
        const lengthMs = Math.round(300 + rnd() * 1_000);
        const from = performance.now();
        log(`${((from - start) / 1000).toFixed(1)} s: ${kind} for ${lengthMs} ms`);
        if (kind === 'flood-scale-out') {
          faults[kind]++;
          floodRequests += await scaleOut(faults[kind], lengthMs);
          continue;
        }
        if (kind === 'flood-hot' || kind === 'flood-fresh') {
          faults[kind]++;
          const n = faults[kind];
          const caller = kind === 'flood-hot' ? () => `hot-${n}` : (i: number) => `fresh-${n}-${i}`;
          floodRequests += await flood(floodAgent, floodTargets, caller, floodInFlight, from + lengthMs, floodSamples, floodErrors);
          continue;
        }
        // Half the faults (seeded) come with a hot caller flooding through them: the attacker's moment.
        const during = overload && rnd() < 0.5 ? (faults.floodsDuringFaults++, faults.floodsDuringFaults) : 0;
        const flooding = during
          ? flood(floodAgent, duringTargets, () => `hot-during-${during}`, floodInFlight, from + lengthMs, floodSamples, floodErrors)
          : Promise.resolve(0);
        let answeringAt: number;
        if (kind === 'kill') {
          const killedAt = performance.now();
          await server.kill();
          faults.kill++;
          await sleep(lengthMs);
          await server.restart();
          faults.restart++;
          answeringAt = performance.now();
          restarts.push([killedAt, answeringAt]);
        } else if (kind === 'pause') {
          server.pause();
          faults.pause++;
          try {
            await sleep(lengthMs);
          } finally {
            server.resume();
          }
          answeringAt = performance.now();
        } else {
          faults.slow++;
          await slower.call('DEBUG', 'SLEEP', (lengthMs / 1000).toFixed(3));
          answeringAt = performance.now();
        }
        floodRequests += await flooding;
        // Back when every closed route has had the store's word again.
        recovered.clear();
        recoverySince = answeringAt;
        await waitFor(
          `every closed route to be decided by the store after the ${kind}`,
          () => {
            judge();
            return apps.every((a) => recovered.has(a.name));
          },
          15_000,
        ).catch((error: Error) => violate(error.message));
        recoverySince = Infinity;
        const back = performance.now();
        // The first store answer on the last closed route to get one: when limiting resumed.
        const resumed = recovered.size === apps.length ? Math.max(...recovered.values()) : back;
        worstRecoveryMs = Math.max(worstRecoveryMs, resumed - answeringAt);
        if (overload && resumed - answeringAt > RECOVERY_MS + allowanceMs) {
          violate(`closed routes decided by the store again ${(resumed - answeringAt).toFixed(0)} ms after the ${kind} ended (Redis answering), past ${RECOVERY_MS + allowanceMs} ms`);
        }
        unhealthy.push([from, back]);
      }
      const left = end - performance.now();
      if (left > 0) await sleep(left);
      // No key without a TTL: looked at while the load still runs. Its windows are 1 s long, so
      // once it stops every key expires within a second, and a loaded machine takes longer than
      // that to get through what follows (seen: none left to check). Scanned again until it finds
      // keys (the load writes them again within its next requests; seen: none, right after a
      // restart without data on a loaded machine), for at most KEY_SCAN_PASSES passes.
      for (let pass = 0; keysChecked === 0 && pass < KEY_SCAN_PASSES; pass++) {
        if (pass > 0) await sleep(100);
        let cursor = '0';
        do {
          const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
          cursor = next;
          for (const key of keys) {
            keysChecked++;
            const ttl = await client.pttl(key);
            if (ttl === -1) violate(`key ${key} has no TTL`);
          }
        } while (cursor !== '0');
      }
      await running.stop().catch((error: Error) => violate(error.message));
    } finally {
      clearInterval(judging);
    }
    judge();
    heapEnd = retainedHeapMb();
    const errors = [...running.errors.splice(0), ...floodErrors.splice(0)];
    for (const error of errors.slice(0, 5)) violate(`request failed: ${error instanceof Error ? error.message : String(error)}`);
    if (errors.length > 5) violate(`${errors.length - 5} more requests failed`);

    // Admitted by the store within the limit in every window that no fault touched.
    let healthyWindowsChecked = 0;
    const touched = (w: number) => unhealthy.some(([a, b]) => origin + a < (w + 1) * WINDOW_MS && origin + b >= w * WINDOW_MS);
    for (const [key, admitted] of windows) {
      const w = Number(key.split(' ')[3]);
      if (touched(w)) continue;
      healthyWindowsChecked++;
      const limit = limitOf(key.split(' ')[1] as SoakRoute);
      if (admitted > limit) violate(`${key}: ${admitted} admitted by the store in one healthy window, limit ${limit}`);
    }
    // Admitted by anyone (the store, a failure mode, a lease) within the limit plus the documented bound, in every window.
    let worstAdmittedInWindow: SoakReport['worstAdmittedInWindow'] = null;
    let worstScaleOut: SoakReport['worstScaleOut'] = null;
    // A restart forgets admissions only when Redis admitted before the kill and again after the
    // restart within one window: both ends inside it (5 ms of slack, as the windows have).
    const restartsIn = (w: number) => restarts.filter(([k, r]) => origin + k + 5 >= w * WINDOW_MS && origin + r - 5 < (w + 1) * WINDOW_MS).length;
    for (const [key, admitted] of admittedWindows) {
      const parts = key.split(' ');
      const route = parts[1] as SoakRoute;
      const restarted = restartsIn(Number(parts[3]));
      const w = Number(parts[3]);
      const joined = parts[0] === 'express' && route === 'default' ? joins.filter(([a, b]) => origin + a - 5 < (w + 1) * WINDOW_MS && origin + b + 5 >= w * WINDOW_MS).length : 0;
      const ceiling = parts[2].startsWith(SCALE_OUT_CALLER) ? scaleOutCeiling(route, restarted, joined) : admissionCeiling(route, restarted, joined);
      if (!worstAdmittedInWindow || admitted - ceiling > worstAdmittedInWindow.admitted - worstAdmittedInWindow.ceiling) worstAdmittedInWindow = { key, admitted, ceiling };
      if (parts[2].startsWith(SCALE_OUT_CALLER) && (!worstScaleOut || admitted - ceiling > worstScaleOut.admitted - worstScaleOut.ceiling)) worstScaleOut = { key, admitted, ceiling };
      if (admitted > ceiling) {
        violate(`${key}: ${admitted} admitted in one window, past the limit ${limitOf(route)} plus the bound (${ceiling} in all${restarted ? `, ${restarted} restart(s) without data within it counted` : ''})`);
      }
    }

    // Memory flat: what the heap keeps after a full collection at the end within 64 MB of what it kept
    // at the start (the load keeps no answers). Sampled without a collection, the heap of a process
    // already large (a jest worker after other suites) grew 71 MB in 20 s of garbage not yet collected.
    if (heapEnd - heapStart > 64) violate(`heap grew from ${heapStart.toFixed(0)} MB to ${heapEnd.toFixed(0)} MB`);

    const firstFailureLines = lines.filter((l) => l.includes('requests it cannot decide are now')).length;
    // A flood may time calls out too: it counts as a possible outage.
    const outages = faults.kill + faults.pause + faults.slow + faults['flood-hot'] + faults['flood-fresh'] + faults['flood-scale-out'];
    // Every fault is at least one outage, and each outage is announced once (a slow or short fault may end before a call fails: then none).
    if (firstFailureLines > outages * 2) violate(`${firstFailureLines} first-failure lines for ${outages} faults`);

    return {
      seed: opts.seed,
      durationMs: opts.durationMs,
      requests,
      byOutcome,
      faults,
      overload,
      violations,
      violationCount,
      worstMs,
      worstOverDeadlineMs: worstOver,
      latencyAllowanceMs: allowanceMs,
      lateWithoutStallAllowance: lateStrict,
      worstLoopStallMs: loop.worst,
      healthyWindowsChecked,
      callerWindowsChecked: admittedWindows.size,
      worstAdmittedInWindow,
      worstScaleOut,
      floodRequests,
      floodInFlight,
      worstRecoveryMs,
      heapStartMb: heapStart,
      heapEndMb: heapEnd,
      keysChecked,
      logLines: lines.length,
      firstFailureLines,
    };
  } finally {
    loop.stop();
    await load?.stop().catch(() => undefined);
    for (const app of apps) await app.close();
    agent.destroy();
    floodAgent.destroy();
    for (const c of clients) c.disconnect();
    await server.stop();
    host.off('unhandledRejection', onUnhandled);
    host.off('uncaughtException', onUnhandled);
  }
}

/** The report as the lines `pnpm soak` prints. */
export function formatReport(r: SoakReport): string {
  const w = r.worstAdmittedInWindow;
  return [
    `soak: seed ${r.seed}, ${(r.durationMs / 1000).toFixed(0)} s, Express + Fastify + Koa, routes open/closed/local${r.overload ? '/default/hot' : ''}, one redis-server`,
    `requests: ${r.requests} (${Object.entries(r.byOutcome).map(([k, v]) => `${k} ${v}`).join(', ')})`,
    `faults injected: ${r.faults.kill} kill (+${r.faults.restart} restart), ${r.faults.pause} pause (SIGSTOP/SIGCONT), ${r.faults.slow} slow (DEBUG SLEEP)` +
      (r.overload
        ? `; floods: ${r.faults['flood-hot']} of one hot caller, ${r.faults['flood-fresh']} of fresh callers, ${r.faults['flood-scale-out']} with an instance started during a pause (autoscaler), ${r.faults.floodsDuringFaults} of a hot caller through a fault (${r.floodRequests} requests, ${r.floodInFlight} in flight)`
        : ''),
    `deadline ${STORE_TIMEOUT_MS} ms + ${DEADLINE_MARGIN_MS} ms + the loop's own stall${r.latencyAllowanceMs ? ` + an allowance of ${r.latencyAllowanceMs} ms` : ''}: worst response ${r.worstMs.toFixed(0)} ms, worst excess ${r.worstOverDeadlineMs.toFixed(0)} ms; ${r.lateWithoutStallAllowance} later than ${STORE_TIMEOUT_MS + DEADLINE_MARGIN_MS} ms if the stall is not allowed for; worst loop stall ${r.worstLoopStallMs.toFixed(0)} ms`,
    `healthy windows checked: ${r.healthyWindowsChecked} (store admissions <= the route's limit, ${LIMIT} or ${OVERLOAD_LIMIT}, per ${WINDOW_MS} ms); worst recovery: ${r.worstRecoveryMs.toFixed(0)} ms after Redis answered${r.overload ? ` (at most ${RECOVERY_MS + r.latencyAllowanceMs} ms)` : ''}`,
    `caller windows checked: ${r.callerWindowsChecked} (all admissions <= the limit plus the bound, src/bounds.ts); most admitted in one: ${w ? `${w.admitted} of ${w.ceiling} (${w.key})` : 'none'}`,
    ...(r.worstScaleOut ? [`autoscaler phase (an instance started during a pause): most admitted in one window ${r.worstScaleOut.admitted} of ${r.worstScaleOut.ceiling} (the limit + 1 unit per new instance; ${r.worstScaleOut.key})`] : []),
    `keys checked for a TTL: ${r.keysChecked}; heap ${r.heapStartMb.toFixed(0)} MB -> ${r.heapEndMb.toFixed(0)} MB; log lines ${r.logLines} (first-failure ${r.firstFailureLines})`,
    `violations: ${r.violationCount}`,
    ...r.violations.map((v) => `  ${v}`),
  ].join('\n');
}
