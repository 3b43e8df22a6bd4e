// A small, fixed results set for the report and chart tests (numbers made up for the test, not measured).
import type { BenchResults, HeadersSeen, ThroughputRow } from '../src/types';

/** Headers as each kind of contender sends them (what the probe would record). */
export const DRAFT6: HeadersSeen = {
  admitted: ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'RateLimit-Policy'],
  limited: ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'RateLimit-Policy', 'Retry-After'],
};
export const LEGACY: HeadersSeen = {
  admitted: ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'],
  limited: ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'Retry-After'],
};
export const NONE: HeadersSeen = { admitted: [], limited: [] };

function row(partial: Partial<ThroughputRow> & Pick<ThroughputRow, 'id' | 'label' | 'group' | 'regime' | 'medianRps' | 'ratio'>): ThroughputRow {
  return {
    framework: 'express',
    store: partial.group === 'ceiling' ? null : 'redis',
    floorRatio: null,
    wiring: partial.group === 'ceiling' || partial.group === 'peer' ? 'n/a' : 'adapter',
    samples: [partial.medianRps],
    latencyP50Ms: 1,
    latencyP99Ms: 4,
    okShare: partial.regime === 'reject' ? 0 : 1,
    limitedShare: partial.regime === 'reject' ? 1 : 0,
    errors: 0,
    redisCallsPerRequest: partial.group === 'ceiling' || partial.store === 'memory' ? 0 : 5,
    redisCpuUsPerRequest: partial.group === 'ceiling' || partial.store === 'memory' ? 0 : 20,
    serverCpuUsPerRequest: 50 / (partial.cpuRatio ?? partial.ratio),
    cpuRatio: partial.ratio,
    ...partial,
  };
}

export function fixture(): BenchResults {
  return {
    meta: {
      date: '2026-01-02T03:04:05.000Z',
      mode: 'quick',
      durationS: 61,
      node: 'v20.0.0',
      redis: '7.0.15',
      os: 'Linux test',
      cpu: 'Test CPU <2 GHz> & co',
      cores: 2,
      memoryGiB: 24,
      loadAverageStart: [3.5, 2, 1],
      loadAverageEnd: [0.2, 1, 1],
      versions: { '@floodgate/core': '0.1.0', express: '5.3.0' },
      settings: { rounds: 1, secondsPerRun: 1, warmupSeconds: 0.5, connections: 10, raceProcesses: 3 },
      hotKeys: false,
      notes: ['a note for the reader'],
    },
    throughput: [
      row({ id: 'express/none', label: 'no limiter (bare route)', group: 'ceiling', store: null, regime: null, medianRps: 10_000, ratio: 1, samples: [10_000, 10_000] }),
      // The memory group: Floodgate (default algorithm), with the OpenTelemetry SDK, two peers.
      row({ id: 'express/floodgate-memory/admit', label: 'Floodgate, memory (sliding-window-counter)', group: 'floodgate', store: 'memory', regime: 'admit', medianRps: 9_300, ratio: 0.93, headers: DRAFT6 }),
      row({ id: 'express/floodgate-memory/reject', label: 'Floodgate, memory (sliding-window-counter)', group: 'floodgate', store: 'memory', regime: 'reject', medianRps: 9_100, ratio: 0.91, headers: DRAFT6 }),
      row({ id: 'express/floodgate-memory-otel/admit', label: 'Floodgate, memory (sliding-window-counter), OpenTelemetry SDK', group: 'floodgate', store: 'memory', regime: 'admit', medianRps: 8_800, ratio: 0.88, headers: DRAFT6 }),
      row({ id: 'express/floodgate-memory-otel/reject', label: 'Floodgate, memory (sliding-window-counter), OpenTelemetry SDK', group: 'floodgate', store: 'memory', regime: 'reject', medianRps: 9_000, ratio: 0.9, headers: DRAFT6 }),
      row({ id: 'express/express-rate-limit-memory/admit', label: 'express-rate-limit (MemoryStore)', group: 'peer', store: 'memory', regime: 'admit', medianRps: 9_000, ratio: 0.9, headers: LEGACY }),
      row({ id: 'express/express-rate-limit-memory/reject', label: 'express-rate-limit (MemoryStore)', group: 'peer', store: 'memory', regime: 'reject', medianRps: 9_400, ratio: 0.94, headers: LEGACY }),
      // Faster than Floodgate in memory, but sends no rate-limit header: goal (b) leaves it out.
      row({ id: 'express/rate-limiter-flexible-memory/admit', label: 'rate-limiter-flexible (RateLimiterMemory)', group: 'peer', store: 'memory', regime: 'admit', medianRps: 9_600, ratio: 0.96, headers: NONE }),
      row({ id: 'express/rate-limiter-flexible-memory/reject', label: 'rate-limiter-flexible (RateLimiterMemory)', group: 'peer', store: 'memory', regime: 'reject', medianRps: 9_700, ratio: 0.97, headers: NONE }),
      // The Redis group.
      row({ id: 'express/floodgate-redis-fixed-window/admit', label: 'Floodgate, Redis (fixed-window)', group: 'floodgate', regime: 'admit', medianRps: 8_500, ratio: 0.85, floorRatio: 0.94, redisCpuUsPerRequest: 12.5, headers: DRAFT6 }),
      row({ id: 'express/floodgate-redis-fixed-window/reject', label: 'Floodgate, Redis (fixed-window)', group: 'floodgate', regime: 'reject', medianRps: 9_600, ratio: 0.96, redisCallsPerRequest: 0, headers: DRAFT6 }),
      row({ id: 'express/floodgate-redis-sliding-window-counter/admit', label: 'Floodgate, Redis (sliding-window-counter)', group: 'floodgate', regime: 'admit', medianRps: 8_000, ratio: 0.8, floorRatio: 0.884, headers: DRAFT6 }),
      row({ id: 'express/floodgate-redis-sliding-window-counter/reject', label: 'Floodgate, Redis (sliding-window-counter)', group: 'floodgate', regime: 'reject', medianRps: 9_000, ratio: 0.9, redisCallsPerRequest: 0, headers: DRAFT6 }),
      row({ id: 'express/express-rate-limit/admit', label: 'peer <one> & two', group: 'peer', regime: 'admit', medianRps: 4_000, ratio: 0.4, cpuRatio: 0.625, floorRatio: 0.44, headers: LEGACY }),
      row({ id: 'express/express-rate-limit/reject', label: 'peer <one> & two', group: 'peer', regime: 'reject', medianRps: 5_000, ratio: 0.5, headers: LEGACY }),
      row({ id: 'express/rate-limiter-flexible/admit', label: 'rate-limiter-flexible (RateLimiterRedis)', group: 'peer', regime: 'admit', medianRps: 6_400, ratio: 0.64, floorRatio: 0.7, headers: NONE }),
      row({ id: 'express/rate-limiter-flexible/reject', label: 'rate-limiter-flexible (RateLimiterRedis)', group: 'peer', regime: 'reject', medianRps: 6_600, ratio: 0.66, headers: NONE }),
      // The floors: admitting only; the per-turn one runs twice a round.
      row({ id: 'express/redis-floor/admit', label: 'floor: one Redis PING per request, no limiting', group: 'floor', regime: 'admit', medianRps: 8_200, ratio: 0.82, headers: { admitted: [], limited: null } }),
      row({ id: 'express/redis-floor-turn/admit', label: 'floor: one Redis PING per event-loop turn, no limiting', group: 'floor', regime: 'admit', medianRps: 9_050, ratio: 0.905, samples: [9_000, 9_100], headers: { admitted: [], limited: null } }),
    ],
    redisCeiling: [
      { algorithm: 'sliding-window-counter', redisBenchmarkRps: 40_000, redisBenchmarkPipelinedRps: 36_000, ioredisRps: 30_000, coreRps: 24_000, ratio: 0.6, connections: 10 },
    ],
    race: [
      { id: 'floodgate-gcra', label: 'Floodgate, Redis (gcra)', group: 'floodgate', processes: 3, limit: 50, attemptsPerRepetition: 300, admitted: [50], medianRatio: 1, maxRatio: 1 },
      { id: 'naive', label: 'naive GET, then INCR', group: 'naive', processes: 3, limit: 50, attemptsPerRepetition: 300, admitted: [61], medianRatio: 1.22, maxRatio: 1.22 },
    ],
    accuracy: [
      {
        algorithm: 'fixed-window',
        limit: 100,
        windowMs: 60_000,
        patterns: [
          { pattern: 'boundary-burst', attempts: 400, admitted: 200, maxInWindow: 200, ratio: 2 },
          { pattern: 'steady-flood', attempts: 1600, admitted: 400, maxInWindow: 100, ratio: 1 },
        ],
        worstRatio: 2,
      },
    ],
    redisMemory: [
      { library: 'Floodgate', algorithm: 'sliding-window-log', limit: 100, keys: 1, bytes: 3176 },
      { library: 'Floodgate', algorithm: 'sliding-window-log', limit: 1000, keys: 1, bytes: 118_496 },
    ],
    memoryStore: [
      { algorithm: 'gcra', unitsPerCaller: 1, limit: 100, callers: 4000, bytesPerCaller: 269, samples: [260, 269, 284], noiseBytes: 12 },
      // Not above its noise: printed as such, never as a number.
      { algorithm: 'gcra', unitsPerCaller: 100, limit: 100, callers: 500, bytesPerCaller: 41, samples: [-20, 41, 90], noiseBytes: 60 },
    ],
    memoryStoreEmptyBytes: 1_607_680,
    profiles: [],
  };
}
