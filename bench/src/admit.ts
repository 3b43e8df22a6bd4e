// The admit regime's limit for one algorithm: sliding-window-log takes at most 10,000 per window
// (one entry per unit), so its 1e9 per hour becomes 10,000 per second, the most it takes; a run
// faster than that on one subject sees some 429s in the log's admit row.
import type { AlgorithmName } from '@floodgate/core';

export const LOG_MAX_LIMIT = 10_000;

export function admitLimits(algorithm: AlgorithmName | undefined, limit: number, windowMs: number): { limit: number; windowMs: number } {
  return algorithm === 'sliding-window-log' && limit > LOG_MAX_LIMIT ? { limit: LOG_MAX_LIMIT, windowMs: 1_000 } : { limit, windowMs };
}
