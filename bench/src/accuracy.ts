// Accuracy: the most each algorithm admits in any window-long span under adversarial request patterns.
import { ALGORITHMS, MemoryStore, createLimiter, type AlgorithmName } from '@floodgate/core';
import type { AccuracyPatternResult, AccuracyRow } from './types';

/**
 * The most timestamps in any half-open span [t, t + windowMs): the exact sliding-window count, the
 * ground truth every algorithm is judged against. `times` need not be sorted.
 */
export function maxInWindow(times: readonly number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let best = 0;
  let start = 0;
  for (let end = 0; end < sorted.length; end++) {
    while (sorted[end] - sorted[start] >= windowMs) start++;
    best = Math.max(best, end - start + 1);
  }
  return best;
}

export interface Pattern {
  name: string;
  /** Why this pattern is adversarial, for the report. */
  about: string;
  /** Attempt times in ms (one entry per request), ascending. */
  times(limit: number, windowMs: number): number[];
}

const burst = (at: number, n: number): number[] => Array.from({ length: n }, () => at);

export const PATTERNS: readonly Pattern[] = [
  {
    name: 'boundary-burst',
    about: '2x limit attempts in the last ms of a fixed window, 2x limit in the first ms of the next',
    times: (limit, windowMs) => [...burst(windowMs - 1, 2 * limit), ...burst(windowMs, 2 * limit)],
  },
  {
    name: 'late-burst-pair',
    about:
      "2x limit attempts at the end of one window and again 2 ms before the end of the next (W - 1 ms apart): " +
      "sliding-window-counter's interpolation assumes the first burst was spread over its window, so it counts " +
      'almost none of it; a token bucket has refilled almost fully',
    times: (limit, windowMs) => [...burst(windowMs - 1, 2 * limit), ...burst(2 * windowMs - 2, 2 * limit)],
  },
  {
    name: 'steady-flood',
    about: 'an attempt every windowMs / (4 x limit) ms for 4 windows: a greedy client that never stops',
    times: (limit, windowMs) => {
      const step = windowMs / (4 * limit);
      return Array.from({ length: 16 * limit }, (_, i) => Math.floor(i * step));
    },
  },
];

/**
 * Plays `times` against one algorithm on a MemoryStore whose clock is set to each attempt's time,
 * and returns the times of the admitted attempts. The memory twins make the same decisions as the Lua
 * scripts (core's conformance suite checks that), so this is the Redis behaviour too.
 */
export async function admittedTimes(
  algorithm: AlgorithmName,
  limit: number,
  windowMs: number,
  times: readonly number[],
): Promise<number[]> {
  let now = 0;
  const clock = () => now;
  const limiter = createLimiter({
    store: new MemoryStore({ clock }),
    algorithm,
    limit,
    windowMs,
    clock,
    blockCacheSize: 0,
  });
  const admitted: number[] = [];
  for (const t of times) {
    now = t;
    const decision = await limiter.consume('attacker');
    if (decision.allowed) admitted.push(t);
  }
  return admitted;
}

export async function measureAccuracy(
  algorithm: AlgorithmName,
  limit: number,
  windowMs: number,
  patterns: readonly Pattern[] = PATTERNS,
): Promise<AccuracyRow> {
  const results: AccuracyPatternResult[] = [];
  for (const pattern of patterns) {
    const times = pattern.times(limit, windowMs);
    const admitted = await admittedTimes(algorithm, limit, windowMs, times);
    const max = maxInWindow(admitted, windowMs);
    results.push({ pattern: pattern.name, attempts: times.length, admitted: admitted.length, maxInWindow: max, ratio: max / limit });
  }
  return { algorithm, limit, windowMs, patterns: results, worstRatio: Math.max(...results.map((r) => r.ratio)) };
}

export async function runAccuracy(limit = 100, windowMs = 60_000): Promise<AccuracyRow[]> {
  const rows: AccuracyRow[] = [];
  for (const algorithm of ALGORITHMS) rows.push(await measureAccuracy(algorithm, limit, windowMs));
  return rows;
}
