// The race run: several server processes limit one subject together; admitted / limit shows who over-admits.
import { randomUUID } from 'node:crypto';
import type { AlgorithmName } from '@floodgate/core';
import type { RedisServer } from '@floodgate/testing';
import { startServer, type RunningServer } from './children';
import { runLoad } from './load';
import type { Progress } from './progress';
import { median, sum } from './stats';
import type { Framework, LimiterSpec, RaceRow } from './types';

export interface RaceSettings {
  processes: number;
  limit: number;
  /** Attempts per process per repetition. */
  attemptsPerProcess: number;
  /** Connections per process. */
  connections: number;
  repetitions: number;
  algorithms: readonly AlgorithmName[];
  hotKeys: boolean;
}

interface RaceContender {
  id: string;
  label: string;
  group: RaceRow['group'];
  framework: Framework;
  limiter: LimiterSpec;
}

// Ten minutes: token-bucket and gcra refill limit / 600 per second, so a race that lasts a second or two
// earns them well under one extra unit.
const WINDOW_MS = 600_000;
const SUBJECT_HEADER = 'x-subject';

export function raceContenders(settings: RaceSettings): RaceContender[] {
  const base = { limit: settings.limit, windowMs: WINDOW_MS, keyHeader: SUBJECT_HEADER };
  const list: RaceContender[] = settings.algorithms.map((algorithm) => ({
    id: `floodgate-${algorithm}`,
    label: `Floodgate, Redis (${algorithm})`,
    group: 'floodgate',
    framework: 'express',
    limiter: { ...base, kind: 'floodgate', store: 'redis', algorithm, prefix: `fgbrace-${algorithm}` },
  }));
  if (settings.hotKeys) {
    const algorithm: AlgorithmName = 'sliding-window-counter';
    list.push({
      id: `floodgate-hot-${algorithm}`,
      label: `Floodgate, Redis, hot-key mode (${algorithm}, instances ${settings.processes})`,
      group: 'floodgate-hot',
      framework: 'express',
      limiter: { ...base, kind: 'floodgate', store: 'redis', algorithm, hotKeyInstances: settings.processes, prefix: `fgbrace-hot` },
    });
  }
  list.push(
    { id: 'express-rate-limit', label: 'express-rate-limit + rate-limit-redis', group: 'peer', framework: 'express', limiter: { ...base, kind: 'express-rate-limit', prefix: 'fgbrace-erl' } },
    { id: 'rate-limiter-flexible', label: 'rate-limiter-flexible (RateLimiterRedis)', group: 'peer', framework: 'express', limiter: { ...base, kind: 'rate-limiter-flexible', prefix: 'fgbrace-rlf' } },
    { id: 'fastify-rate-limit', label: '@fastify/rate-limit (Redis)', group: 'peer', framework: 'fastify', limiter: { ...base, kind: 'fastify-rate-limit', prefix: 'fgbrace-frl' } },
    { id: 'koa-ratelimit', label: 'koa-ratelimit (Redis)', group: 'peer', framework: 'koa', limiter: { ...base, kind: 'koa-ratelimit', prefix: 'fgbrace-krl' } },
    { id: 'naive', label: 'naive GET, then INCR', group: 'naive', framework: 'express', limiter: { ...base, kind: 'naive', prefix: 'fgbrace-naive' } },
  );
  return list;
}

export async function runRace(redis: RedisServer, settings: RaceSettings, progress: Progress): Promise<RaceRow[]> {
  const contenders = raceContenders(settings);
  const frameworks = [...new Set(contenders.map((c) => c.framework))];
  const servers = new Map<Framework, RunningServer[]>();
  try {
    for (const framework of frameworks) {
      const mounts = contenders.filter((c) => c.framework === framework).map((c) => ({ path: `/${c.id}`, limiter: c.limiter }));
      progress.step(`race: starting ${settings.processes} ${framework} processes`);
      servers.set(
        framework,
        await Promise.all(
          Array.from({ length: settings.processes }, (_, i) => startServer({ framework, redisPort: redis.port, mounts }, `race-${framework}-${i}`)),
        ),
      );
    }
    const admitted = new Map<string, number[]>(contenders.map((c) => [c.id, []]));
    for (let rep = 0; rep < settings.repetitions; rep++) {
      for (const c of contenders) {
        progress.step(`race: repetition ${rep + 1}/${settings.repetitions} ${c.id}`, 1_000);
        // A fresh subject per repetition: no state (nor any process's block cache) carries over.
        const headers = { [SUBJECT_HEADER]: `race-${rep}-${randomUUID()}` };
        const loads = await Promise.all(
          servers.get(c.framework)!.map((s) =>
            runLoad({ url: `${s.url}/${c.id}`, connections: settings.connections, amount: settings.attemptsPerProcess, headers }),
          ),
        );
        admitted.get(c.id)!.push(sum(loads.map((l) => l.ok)));
      }
    }
    return contenders.map((c) => {
      const counts = admitted.get(c.id)!;
      return {
        id: c.id,
        label: c.label,
        group: c.group,
        processes: settings.processes,
        limit: settings.limit,
        attemptsPerRepetition: settings.processes * settings.attemptsPerProcess,
        admitted: counts,
        medianRatio: median(counts) / settings.limit,
        maxRatio: Math.max(...counts) / settings.limit,
      };
    });
  } finally {
    await Promise.all([...servers.values()].flat().map((s) => s.stop()));
  }
}
