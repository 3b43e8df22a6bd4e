// The chaos soak: steady load through Express, Fastify and Koa on one real redis-server killed, paused, restarted and slowed at random (seeded), with its invariants checked.
import { Agent, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { runInThisContext } from 'node:vm';
import { RedisStore, type FailMode, type Logger } from '@floodgate/core';
import { rateLimit as expressRateLimit } from '@floodgate/express';
import { rateLimit as fastifyRateLimit } from '@floodgate/fastify';
import { rateLimit as koaRateLimit } from '@floodgate/koa';
import { prng, sleep, startRedis, steadyLoad, waitFor, type RedisServer } from '@floodgate/testing';
import express from 'express';
import fastify from 'fastify';
import Koa from 'koa';
import type { Redis } from 'ioredis';

/** The store deadline every decision must keep (RedisStore `timeoutMs`; Floodgate's default). */
export const STORE_TIMEOUT_MS = 100;
/**
 * The issue's margin over the deadline. A response may also be late by the time this process's
 * event loop stood still while it was in flight (measured, see `LoopWatch`): on a shared 2-core
 * machine a GC or a neighbour's jest run stalls the loop for tens, sometimes hundreds, of ms, and
 * no library can answer while its loop is stopped. A wait inside Floodgate (a hang on a paused
 * Redis, a draw behind another's timeout) does not stall the loop, so it still shows in full.
 */
export const DEADLINE_MARGIN_MS = 50;
/** Limit per fixed window of every route (one subject per route: every request comes from 127.0.0.1). */
export const LIMIT = 20;
export const WINDOW_MS = 1_000;
/** `failMode: 'local'` shares: each instance admits LIMIT / INSTANCES from memory while Redis is out. */
export const INSTANCES = 2;
const ADAPTERS = ['express', 'fastify', 'koa'] as const;
const ROUTES: readonly FailMode[] = ['open', 'closed', 'local'];
export const FAULT_KINDS = ['kill', 'pause', 'slow'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface SoakOptions {
  durationMs: number;
  /** Seeds the faults' order, kinds and lengths. */
  seed: number;
  /** One request to every route of every app every `everyMs` (9 routes). Default 30 ms (300 requests/s). */
  everyMs?: number;
  /** Progress lines. Default none. */
  log?: (line: string) => void;
}

export interface SoakReport {
  seed: number;
  durationMs: number;
  requests: number;
  byOutcome: Record<string, number>;
  faults: Record<FaultKind | 'restart', number>;
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
  /** ms from Redis answering again to every closed route serving from the store, worst of all faults. */
  worstRecoveryMs: number;
  heapStartMb: number;
  heapEndMb: number;
  keysChecked: number;
  logLines: number;
  firstFailureLines: number;
}

/** How long the event loop stood still, per 10 ms tick: what a response's lateness may owe to the process, not to Floodgate. */
class LoopWatch {
  private readonly ticks: { at: number; stall: number }[] = [];
  private last = performance.now();
  worst = 0;
  private readonly timer = setInterval(() => {
    const now = performance.now();
    const stall = Math.max(0, now - this.last - 10);
    this.last = now;
    this.worst = Math.max(this.worst, stall);
    this.ticks.push({ at: now, stall });
    // Responses are judged within a second of their answer; keep a little more.
    while (this.ticks.length > 0 && this.ticks[0].at < now - 15_000) this.ticks.shift();
  }, 10);
  /** The loop's stalls that ended within [from, to + 10]: time the process could not run at all. */
  stalledWithin(from: number, to: number): number {
    let sum = 0;
    for (const t of this.ticks) if (t.at >= from && t.at <= to + 10) sum += t.stall;
    return sum;
  }
  stop(): void {
    clearInterval(this.timer);
  }
}

interface App {
  name: string;
  port: number;
  close(): Promise<void>;
}

function options(store: RedisStore, prefix: string, logger: Logger) {
  return { store, prefix, logger, algorithm: 'fixed-window' as const, limit: LIMIT, windowMs: WINDOW_MS, retryAfterJitterMs: 0 };
}
const perRoute = (mode: FailMode) => ({ failMode: mode, ...(mode === 'local' ? { instances: INSTANCES } : {}) });

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}
const closeServer = (server: Server) =>
  new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });

/** Three apps, one per adapter, each with /open, /closed and /local on the one store. */
async function startApps(store: RedisStore, prefix: string, logger: Logger): Promise<App[]> {
  const e = express();
  for (const mode of ROUTES) e.get(`/${mode}`, expressRateLimit({ ...options(store, `${prefix}e`, logger), ...perRoute(mode) }), (_req, res) => void res.send('ok'));
  const eServer = e.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => eServer.once('listening', resolve));

  const f = fastify({ logger: false });
  await f.register(fastifyRateLimit, options(store, `${prefix}f`, logger));
  for (const mode of ROUTES) f.get(`/${mode}`, { config: { rateLimit: perRoute(mode) } }, async () => 'ok');
  await f.listen({ port: 0, host: '127.0.0.1' });

  const k = new Koa();
  const koaRoutes = new Map(ROUTES.map((mode) => [`/${mode}`, koaRateLimit({ ...options(store, `${prefix}k`, logger), ...perRoute(mode) })]));
  k.use(async (ctx, next) => {
    const limiter = koaRoutes.get(ctx.path);
    if (!limiter) return next();
    await limiter(ctx, async () => {
      ctx.body = 'ok';
    });
  });
  const kServer = k.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => kServer.once('listening', resolve));

  return [
    { name: 'express', port: (eServer.address() as AddressInfo).port, close: () => closeServer(eServer) },
    { name: 'fastify', port: (f.server.address() as AddressInfo).port, close: () => f.close() },
    { name: 'koa', port: (kServer.address() as AddressInfo).port, close: () => closeServer(kServer) },
  ];
}

interface Answer {
  status: number;
  limit: string | undefined;
}

function get(agent: Agent, port: number, path: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method: 'GET', agent }, (res) => {
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
function outcome(route: FailMode, a: Answer): string {
  const fromStore = a.limit === String(LIMIT);
  if (a.limit !== undefined && !fromStore) return 'odd';
  if (a.status === 200) return fromStore ? 'store-admitted' : `fail-${route}-admitted`;
  if (a.status === 429) return fromStore ? 'store-limited' : `fail-${route}-limited`;
  if (a.status === 503 && !fromStore) return `fail-${route}-refused`;
  return `status-${a.status}`;
}

export async function runSoak(opts: SoakOptions): Promise<SoakReport> {
  const log = opts.log ?? (() => undefined);
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
  const agent = new Agent({ keepAlive: true, maxSockets: 32 });
  const loop = new LoopWatch();
  const faults: SoakReport['faults'] = { kill: 0, pause: 0, slow: 0, restart: 0 };
  const byOutcome: Record<string, number> = {};
  const windows = new Map<string, number>();
  // [from, to] (performance.now()) from each fault's start until limiting was seen again: no window overlapping one is judged.
  const unhealthy: [number, number][] = [];
  let requests = 0;
  let worstMs = 0;
  let worstOver = -Infinity;
  let lateStrict = 0;
  let worstRecoveryMs = 0;
  const heap: number[] = [];
  const lastStoreAnswer = new Map<string, number>();
  const prefix = `soak${opts.seed}x`;
  let apps: App[] = [];
  let load: ReturnType<typeof steadyLoad<Answer>> | undefined;
  try {
    const client = server.client({ autoResendUnfulfilledCommands: false });
    client.on('error', () => undefined); // expected: the soak kills this server on purpose
    const slower = server.client({ commandTimeout: 10_000 });
    clients.push(client, slower);
    await client.ping();
    const store = new RedisStore({ client, timeoutMs: STORE_TIMEOUT_MS });
    apps = await startApps(store, prefix, logger);

    const shots: Record<string, () => Promise<Answer>> = {};
    for (const app of apps) for (const route of ROUTES) shots[`${app.name} ${route}`] = () => get(agent, app.port, `/${route}`);
    load = steadyLoad(shots, opts.everyMs ?? 30);
    const running = load;

    const origin = performance.timeOrigin;
    const judge = () => {
      // Drained as they come, so a run of any length keeps no answers.
      for (const s of running.samples.splice(0)) {
        requests++;
        const [adapter, route] = s.route.split(' ') as [string, FailMode];
        const kind = outcome(route, s);
        byOutcome[kind] = (byOutcome[kind] ?? 0) + 1;
        const answeredAt = s.firedAt + s.ms;
        worstMs = Math.max(worstMs, s.ms);
        const over = s.ms - STORE_TIMEOUT_MS - DEADLINE_MARGIN_MS;
        if (over > 0) lateStrict++;
        const excess = over - loop.stalledWithin(s.firedAt, answeredAt);
        worstOver = Math.max(worstOver, excess);
        if (excess > 0) violate(`${s.route}: answered in ${s.ms.toFixed(0)} ms, past ${STORE_TIMEOUT_MS} + ${DEADLINE_MARGIN_MS} ms plus the loop's stall`);
        // Each route answers only as its failMode allows: closed never admits without the store, open never refuses.
        const allowed = ['store-admitted', 'store-limited', { open: 'fail-open-admitted', closed: 'fail-closed-refused', local: 'fail-local-admitted' }[route]];
        if (route === 'local') allowed.push('fail-local-limited');
        if (!allowed.includes(kind)) violate(`${s.route}: ${kind} (status ${s.status}, RateLimit-Limit ${s.limit ?? 'none'})`);
        if (kind === 'store-admitted' || kind === 'store-limited') lastStoreAnswer.set(s.route, answeredAt);
        if (kind !== 'store-admitted') continue;
        // The window the script ran in, when the whole request lies inside one (Redis TIME and this clock are the host's; 5 ms of slack each side).
        const from = Math.floor((origin + s.firedAt - 5) / WINDOW_MS);
        const to = Math.floor((origin + answeredAt + 5) / WINDOW_MS);
        if (from !== to) continue;
        const key = `${adapter} ${route} ${from}`;
        windows.set(key, (windows.get(key) ?? 0) + 1);
      }
    };
    const judging = setInterval(judge, 200);
    const heapTimer = setInterval(() => heap.push(process.memoryUsage().heapUsed), 1_000);
    try {
      const start = performance.now();
      const end = start + opts.durationMs;
      // Every kind once per round, in a seeded order: a short run still sees each.
      let round: FaultKind[] = [];
      // Until the end, and in any case until each kind has struck once (a loaded machine runs a short soak slowly).
      const more = (leftMs: number) => performance.now() < end - leftMs || FAULT_KINDS.some((k) => faults[k] === 0);
      while (more(2_500)) {
        await sleep(800 + rnd() * 1_200);
        if (!more(2_000)) break;
        if (round.length === 0) round = [...FAULT_KINDS].sort(() => rnd() - 0.5);
        const kind = round.shift()!;
        const lengthMs = Math.round(300 + rnd() * 1_000);
        const from = performance.now();
        let answeringAt: number;
        if (kind === 'kill') {
          await server.kill();
          faults.kill++;
          await sleep(lengthMs);
          await server.restart();
          faults.restart++;
          answeringAt = performance.now();
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
        log(`${((from - start) / 1000).toFixed(1)} s: ${kind} for ${lengthMs} ms`);
        // Back when every closed route has had the store's word again.
        await waitFor(
          `every closed route to be decided by the store after the ${kind}`,
          () => apps.every((a) => (lastStoreAnswer.get(`${a.name} closed`) ?? 0) > answeringAt),
          15_000,
        ).catch((error: Error) => violate(error.message));
        const back = performance.now();
        worstRecoveryMs = Math.max(worstRecoveryMs, back - answeringAt);
        unhealthy.push([from, back]);
      }
      const left = end - performance.now();
      if (left > 0) await sleep(left);
      await running.stop().catch((error: Error) => violate(error.message));
    } finally {
      clearInterval(judging);
      clearInterval(heapTimer);
    }
    judge();
    const errors = running.errors.splice(0);
    for (const error of errors.slice(0, 5)) violate(`request failed: ${error instanceof Error ? error.message : String(error)}`);
    if (errors.length > 5) violate(`${errors.length - 5} more requests failed`);

    // Admitted within the limit in every window that no fault touched.
    let healthyWindowsChecked = 0;
    const origin2 = performance.timeOrigin;
    const touched = (w: number) => unhealthy.some(([a, b]) => origin2 + a < (w + 1) * WINDOW_MS && origin2 + b >= w * WINDOW_MS);
    for (const [key, admitted] of windows) {
      const w = Number(key.split(' ')[2]);
      if (touched(w)) continue;
      healthyWindowsChecked++;
      if (admitted > LIMIT) violate(`${key}: ${admitted} admitted by the store in one healthy window, limit ${LIMIT}`);
    }

    // No key without a TTL.
    let keysChecked = 0;
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

    // Memory roughly flat: the median heap of the last third within 64 MB of the first third's (the load keeps no answers).
    const third = Math.max(1, Math.floor(heap.length / 3));
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
    const heapStart = median(heap.slice(0, third)) / 2 ** 20;
    const heapEnd = median(heap.slice(-third)) / 2 ** 20;
    if (heapEnd - heapStart > 64) violate(`heap grew from ${heapStart.toFixed(0)} MB to ${heapEnd.toFixed(0)} MB`);

    const firstFailureLines = lines.filter((l) => l.includes('requests it cannot decide are now')).length;
    const outages = faults.kill + faults.pause + faults.slow;
    // Every fault is at least one outage, and each outage is announced once (a slow or short fault may end before a call fails: then none).
    if (firstFailureLines > outages * 2) violate(`${firstFailureLines} first-failure lines for ${outages} faults`);

    return {
      seed: opts.seed,
      durationMs: opts.durationMs,
      requests,
      byOutcome,
      faults,
      violations,
      violationCount,
      worstMs,
      worstOverDeadlineMs: worstOver,
      lateWithoutStallAllowance: lateStrict,
      worstLoopStallMs: loop.worst,
      healthyWindowsChecked,
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
    for (const c of clients) c.disconnect();
    await server.stop();
    host.off('unhandledRejection', onUnhandled);
    host.off('uncaughtException', onUnhandled);
  }
}

/** The report as the lines `pnpm soak` prints. */
export function formatReport(r: SoakReport): string {
  return [
    `soak: seed ${r.seed}, ${(r.durationMs / 1000).toFixed(0)} s, Express + Fastify + Koa, routes open/closed/local, one redis-server`,
    `requests: ${r.requests} (${Object.entries(r.byOutcome).map(([k, v]) => `${k} ${v}`).join(', ')})`,
    `faults injected: ${r.faults.kill} kill (+${r.faults.restart} restart), ${r.faults.pause} pause (SIGSTOP/SIGCONT), ${r.faults.slow} slow (DEBUG SLEEP)`,
    `deadline ${STORE_TIMEOUT_MS} ms + ${DEADLINE_MARGIN_MS} ms + the loop's own stall: worst response ${r.worstMs.toFixed(0)} ms, worst excess ${r.worstOverDeadlineMs.toFixed(0)} ms; ${r.lateWithoutStallAllowance} later than ${STORE_TIMEOUT_MS + DEADLINE_MARGIN_MS} ms if the stall is not allowed for; worst loop stall ${r.worstLoopStallMs.toFixed(0)} ms`,
    `healthy windows checked: ${r.healthyWindowsChecked} (store admissions <= ${LIMIT} per ${WINDOW_MS} ms); worst recovery: ${r.worstRecoveryMs.toFixed(0)} ms after Redis answered`,
    `keys checked for a TTL: ${r.keysChecked}; heap ${r.heapStartMb.toFixed(0)} MB -> ${r.heapEndMb.toFixed(0)} MB; log lines ${r.logLines} (first-failure ${r.firstFailureLines})`,
    `violations: ${r.violationCount}`,
    ...r.violations.map((v) => `  ${v}`),
  ].join('\n');
}
