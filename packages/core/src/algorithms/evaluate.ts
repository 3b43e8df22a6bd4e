// Runs the in-memory twins over N limits, all-or-nothing: the same steps as lua/main.lua.
import type { StoreLimit, Twin, TwinCheck, AlgorithmName } from './types';
import { fixedWindow } from './fixed-window/fixed-window';
import { slidingWindowLog } from './sliding-window-log/sliding-window-log';
import { slidingWindowCounter } from './sliding-window-counter/sliding-window-counter';
import { tokenBucket } from './token-bucket/token-bucket';
import { gcra } from './gcra/gcra';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const TWINS: Record<AlgorithmName, Twin<any>> = {
  'fixed-window': fixedWindow,
  'sliding-window-log': slidingWindowLog,
  'sliding-window-counter': slidingWindowCounter,
  'token-bucket': tokenBucket,
  gcra,
};

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
