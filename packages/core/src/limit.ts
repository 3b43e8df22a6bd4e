// One limit as the limiter enforces it: parsed by options.ts, read by decisions, the failure policy and the stores.
import type { AlgorithmName, StoreLimit } from './algorithms/registry';

export interface ResolvedLimit {
  readonly name: string;
  readonly algorithm: AlgorithmName;
  /** The limit (window algorithms) or burst (token-bucket, gcra). */
  readonly limit: number;
  /** The window; for token-bucket and gcra, the time to refill a full burst. */
  readonly windowMs: number;
  /** What the store is sent. */
  readonly store: StoreLimit;
  /** The last part of this limit's key. */
  readonly keySuffix: string;
}
