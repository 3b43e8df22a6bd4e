// Throughput: every contender under autocannon, rounds alternating between contenders, ratios to the ceiling.
import { readFileSync } from 'node:fs';
import type { AlgorithmName } from '@floodgate/core';
import type { RedisServer } from '@floodgate/testing';
import { startServer, type RunningServer } from './children';
import { runLoad, type LoadResult } from './load';
import type { Progress } from './progress';
import { median, pairedRatio, ratio, sum } from './stats';
import type { Framework, LimiterSpec, Regime, ThroughputRow } from './types';

export interface ThroughputSettings {
  frameworks: readonly Framework[];
  rounds: number;
  secondsPerRun: number;
  warmupSeconds: number;
  connections: number;
  /** Floodgate-on-Redis algorithms to measure (the first is also used for memory and hot-key lines). */
  algorithms: readonly AlgorithmName[];
  hotKeys: boolean;
}

export interface Contender {
  id: string;
  label: string;
  group: ThroughputRow['group'];
  framework: Framework;
  regime: Regime | null;
  limiter: LimiterSpec;
}

/** admit: nothing is ever limited (the limiter's own cost). reject: limit 1, so nearly every answer is a 429. */
export function regimeLimits(regime: Regime | null): Pick<LimiterSpec, 'limit' | 'windowMs'> {
  // A 1 h window keeps token-bucket's and gcra's refill rate (limit / window) in range for a 1e9 limit.
  return regime === 'reject' ? { limit: 1, windowMs: 60_000 } : { limit: 1_000_000_000, windowMs: 3_600_000 };
}

const PEERS: Record<Framework, { kind: LimiterSpec['kind']; label: string }[]> = {
  express: [
    { kind: 'express-rate-limit', label: 'express-rate-limit + rate-limit-redis' },
    { kind: 'rate-limiter-flexible', label: 'rate-limiter-flexible (RateLimiterRedis)' },
  ],
  fastify: [{ kind: 'fastify-rate-limit', label: '@fastify/rate-limit (Redis)' }],
  koa: [{ kind: 'koa-ratelimit', label: 'koa-ratelimit (Redis)' }],
};

/** Hot-key mode needs the number of instances sharing a limit: a small deployment's. */
export const HOT_KEY_INSTANCES = 4;

let unique = 0;
const prefixFor = (id: string) => `fgb${(unique++).toString(36)}-${id.replace(/[^A-Za-z0-9]+/g, '').slice(0, 12)}`;

export function contendersFor(framework: Framework, settings: ThroughputSettings): Contender[] {
  const list: Contender[] = [
    {
      id: `${framework}/none`,
      label: 'no limiter (ceiling)',
      group: 'ceiling',
      framework,
      regime: null,
      limiter: { kind: 'none', prefix: 'none', ...regimeLimits(null) },
    },
  ];
  for (const regime of ['admit', 'reject'] as const) {
    const add = (id: string, label: string, group: Contender['group'], limiter: Omit<LimiterSpec, 'limit' | 'windowMs' | 'prefix'>) =>
      list.push({
        id: `${framework}/${id}/${regime}`,
        label,
        group,
        framework,
        regime,
        limiter: { ...limiter, ...regimeLimits(regime), prefix: prefixFor(`${framework}${id}${regime}`) },
      });
    const first = settings.algorithms[0];
    add('floodgate-memory', `Floodgate, memory (${first})`, 'floodgate', { kind: 'floodgate', store: 'memory', algorithm: first });
    // The same with an OpenTelemetry SDK registered: what exporting the metrics costs per request.
    add('floodgate-memory-otel', `Floodgate, memory (${first}), OpenTelemetry SDK`, 'floodgate', { kind: 'floodgate', store: 'memory', algorithm: first, otel: true });
    for (const algorithm of settings.algorithms) {
      add(`floodgate-redis-${algorithm}`, `Floodgate, Redis (${algorithm})`, 'floodgate', {
        kind: 'floodgate',
        store: 'redis',
        algorithm,
      });
    }
    if (settings.hotKeys) {
      add(`floodgate-redis-hot-${first}`, `Floodgate, Redis, hot-key mode (${first}, ${HOT_KEY_INSTANCES} instances)`, 'floodgate-hot', {
        kind: 'floodgate',
        store: 'redis',
        algorithm: first,
        hotKeyInstances: HOT_KEY_INSTANCES,
      });
    }
    for (const peer of PEERS[framework]) add(peer.kind, peer.label, 'peer', { kind: peer.kind });
    if (regime === 'admit') {
      // Floors: Redis round trips and nothing else. No limiter that asks Redis can keep more.
      add('redis-floor', 'floor: one Redis PING per request, no limiting', 'floor', { kind: 'redis-floor' });
      add('redis-floor-turn', 'floor: one Redis PING per event-loop turn, no limiting', 'floor', { kind: 'redis-floor-turn' });
    }
  }
  return list;
}

/**
 * Floodgate's own report, in the server's log, that its store failed (timeouts, an open circuit):
 * decisions in that stretch came from the failure mode, not from Redis. Undefined when none.
 */
export function storeTrouble(logFile: string): string | undefined {
  let text = '';
  try {
    text = readFileSync(logFile, 'utf8');
  } catch {
    return undefined;
  }
  const line = text.split('\n').find((l) => /\[floodgate\].*(circuit open|FG_STORE_TIMEOUT|FG_STORE_UNAVAILABLE|failed)/.test(l));
  return line?.trim().slice(0, 200);
}

/** Seconds of CPU redis-server has used (user + system), from INFO cpu. */
export function parseRedisCpu(info: string): number {
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? NaN);
  return field('used_cpu_user') + field('used_cpu_sys');
}

/**
 * Redis commands run between two INFO commandstats snapshots, minus the bench's own bookkeeping.
 * Redis counts the commands a script runs as well as the EVALSHA itself, so this is Redis's work,
 * not round trips.
 */
export function commandsBetween(before: Record<string, number>, after: Record<string, number>): number {
  const ignore = new Set(['info', 'config', 'ping', 'client', 'hello', 'command', 'select', 'script', 'memory', 'scan']);
  let total = 0;
  for (const [name, calls] of Object.entries(after)) {
    if (!ignore.has(name.toLowerCase())) total += calls - (before[name] ?? 0);
  }
  return total;
}

async function startAll(contenders: Contender[], redisPort: number, progress: Progress): Promise<Map<string, RunningServer>> {
  const servers = new Map<string, RunningServer>();
  // Two at a time: the machine has two cores and startup is CPU-bound.
  for (let i = 0; i < contenders.length; i += 2) {
    const batch = contenders.slice(i, i + 2);
    progress.step(`throughput: starting ${batch.map((c) => c.id).join(', ')}`);
    const started = await Promise.all(
      batch.map((c) => startServer({ framework: c.framework, redisPort, mounts: [{ path: '/', limiter: c.limiter }] }, c.id)),
    );
    batch.forEach((c, j) => servers.set(c.id, started[j]));
  }
  return servers;
}

interface Measured {
  loads: LoadResult[];
  redisCalls: number;
  redisCpuS: number;
  serverCpuUs: number;
}

/**
 * Rounds: each contender once per round (the ceiling twice), the order rotated every round, so
 * drift hits all alike.
 */
export async function runThroughput(
  redis: RedisServer,
  settings: ThroughputSettings,
  progress: Progress,
): Promise<ThroughputRow[]> {
  const rows: ThroughputRow[] = [];
  for (const framework of settings.frameworks) {
    const contenders = contendersFor(framework, settings);
    const servers = await startAll(contenders, redis.port, progress);
    try {
      for (const c of contenders) {
        progress.step(`throughput: warming ${c.id}`, settings.warmupSeconds * 1000);
        await runLoad({ url: servers.get(c.id)!.url, connections: settings.connections, durationS: settings.warmupSeconds });
      }
      const measured = new Map<string, Measured>(contenders.map((c) => [c.id, { loads: [], redisCalls: 0, redisCpuS: 0, serverCpuUs: 0 }]));
      const [ceilingContender, ...others] = contenders;
      for (let round = 0; round < settings.rounds; round++) {
        const shift = (round * 3) % others.length;
        const rotated = [...others.slice(shift), ...others.slice(0, shift)];
        if (round % 2 === 1) rotated.reverse();
        // Every ratio divides by the ceiling: measure it twice a round (first, and halfway through).
        const half = Math.ceil(rotated.length / 2);
        const order = [ceilingContender, ...rotated.slice(0, half), ceilingContender, ...rotated.slice(half)];
        for (const c of order) {
          progress.step(`throughput: round ${round + 1}/${settings.rounds} ${c.id}`, settings.secondsPerRun * 1000);
          const server = servers.get(c.id)!;
          const before = await redis.commandStats();
          const cpuBefore = parseRedisCpu(await redis.info('cpu'));
          const serverBefore = await server.cpuUs();
          const load = await runLoad({ url: server.url, connections: settings.connections, durationS: settings.secondsPerRun });
          const serverAfter = await server.cpuUs();
          const cpuAfter = parseRedisCpu(await redis.info('cpu'));
          const after = await redis.commandStats();
          const m = measured.get(c.id)!;
          m.loads.push(load);
          m.redisCalls += commandsBetween(before, after);
          m.redisCpuS += cpuAfter - cpuBefore;
          m.serverCpuUs += serverAfter - serverBefore;
        }
      }
      const ceilingRun = measured.get(`${framework}/none`)!;
      const ceilingSamples = ceilingRun.loads.map((l) => l.rps);
      const ceilingCpu = ceilingRun.serverCpuUs / sum(ceilingRun.loads.map((l) => l.total));
      for (const c of contenders) {
        const { loads, redisCalls, redisCpuS, serverCpuUs } = measured.get(c.id)!;
        const responses = sum(loads.map((l) => l.total));
        const rps = median(loads.map((l) => l.rps));
        rows.push({
          framework,
          regime: c.regime,
          id: c.id,
          label: c.label,
          group: c.group,
          wiring: servers.get(c.id)!.wiring,
          samples: loads.map((l) => Math.round(l.rps)),
          medianRps: Math.round(rps),
          // Paired by round (the ceiling runs twice a round), so drift in the machine's load cancels.
          ratio: c.group === 'ceiling' ? 1 : pairedRatio(loads.map((l) => l.rps), ceilingSamples, 2),
          latencyP50Ms: median(loads.map((l) => l.latencyP50Ms)),
          latencyP99Ms: median(loads.map((l) => l.latencyP99Ms)),
          okShare: responses ? sum(loads.map((l) => l.ok)) / responses : 0,
          limitedShare: responses ? sum(loads.map((l) => l.limited)) / responses : 0,
          errors: sum(loads.map((l) => l.errors)),
          redisCallsPerRequest: responses ? redisCalls / responses : null,
          redisCpuUsPerRequest: responses ? (redisCpuS * 1e6) / responses : null,
          serverCpuUsPerRequest: responses ? serverCpuUs / responses : null,
          cpuRatio: c.group === 'ceiling' ? 1 : responses ? ratio(ceilingCpu, serverCpuUs / responses) : NaN,
        });
      }
    } finally {
      await Promise.all([...servers.values()].map((s) => s.stop()));
    }
    for (const row of rows.filter((r) => r.framework === framework)) {
      const server = servers.get(row.id);
      if (server) row.storeTrouble = storeTrouble(server.logFile);
    }
  }
  return rows;
}
