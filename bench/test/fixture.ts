// A small, fixed results set for the report and chart tests (numbers made up for the test, not measured).
import type { BenchResults, ThroughputRow } from '../src/types';

function row(partial: Partial<ThroughputRow> & Pick<ThroughputRow, 'id' | 'label' | 'group' | 'regime' | 'medianRps' | 'ratio'>): ThroughputRow {
  return {
    framework: 'express',
    wiring: partial.group === 'ceiling' || partial.group === 'peer' ? 'n/a' : 'adapter',
    samples: [partial.medianRps],
    latencyP50Ms: 1,
    latencyP99Ms: 4,
    okShare: partial.regime === 'reject' ? 0 : 1,
    limitedShare: partial.regime === 'reject' ? 1 : 0,
    errors: 0,
    redisCallsPerRequest: partial.group === 'ceiling' ? 0 : 5,
    redisCpuUsPerRequest: partial.group === 'ceiling' ? 0 : 20,
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
      row({ id: 'express/none', label: 'no limiter (ceiling)', group: 'ceiling', regime: null, medianRps: 10_000, ratio: 1 }),
      row({ id: 'express/floodgate-redis-sliding-window-counter/admit', label: 'Floodgate, Redis (sliding-window-counter)', group: 'floodgate', regime: 'admit', medianRps: 8_000, ratio: 0.8 }),
      row({ id: 'express/floodgate-redis-sliding-window-counter/reject', label: 'Floodgate, Redis (sliding-window-counter)', group: 'floodgate', regime: 'reject', medianRps: 9_000, ratio: 0.9, redisCallsPerRequest: 0 }),
      row({ id: 'express/express-rate-limit/admit', label: 'peer <one> & two', group: 'peer', regime: 'admit', medianRps: 4_000, ratio: 0.4, cpuRatio: 0.625 }),
      row({ id: 'express/express-rate-limit/reject', label: 'peer <one> & two', group: 'peer', regime: 'reject', medianRps: 5_000, ratio: 0.5 }),
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
      { algorithm: 'gcra', unitsPerCaller: 1, limit: 100, callers: 4000, bytesPerCaller: 269 },
      { algorithm: 'gcra', unitsPerCaller: 100, limit: 100, callers: 500, bytesPerCaller: 219 },
    ],
    memoryStoreEmptyBytes: 1_607_680,
    profiles: [],
  };
}
