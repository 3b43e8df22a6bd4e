// Runs the in-memory twins over N limits, all-or-nothing: the same steps as lua/main.lua.
import { ALGORITHM, ALGORITHMS, type AlgorithmName, type StoreLimit } from './registry';
import type { Twin, TwinCheck } from './types';

/** Each algorithm's twin, by name (from the registry). */
export const TWINS = Object.fromEntries(ALGORITHMS.map((name) => [name, ALGORITHM[name].twin])) as Readonly<Record<AlgorithmName, Twin<unknown>>>;

export interface TwinEvaluation {
  allowed: boolean;
  checks: TwinCheck<unknown>[];
}

/** Checks every limit against its state; the caller writes `checks[i].next` only when `allowed`. */
export function evaluateTwins(
  states: readonly unknown[],
  limits: readonly StoreLimit[],
  cost: number,
  now: number,
): TwinEvaluation {
  let allowed = true;
  const checks = limits.map((limit, i) => {
    const check = TWINS[limit.algorithm].check(states[i], now, limit, cost);
    if (!check.allowed) allowed = false;
    return check;
  });
  return { allowed, checks };
}
