// The store contract: evaluate every limit of one subject atomically, all-or-nothing.
import type { LimitResult, StoreLimit } from '../algorithms/types';

export interface StoreRequest {
  /** One key per limit; all keys of one subject share one {hash tag}. */
  readonly keys: readonly string[];
  readonly limits: readonly StoreLimit[];
  /** Units this request draws from every limit; admitted only if all of them fit in all limits. */
  readonly cost: number;
  /** `peek` evaluates and never writes. */
  readonly mode: 'consume' | 'peek';
}

export interface StoreResult {
  /** True when every limit admitted (and, for `consume`, all were charged). */
  readonly allowed: boolean;
  /** One result per limit, in request order. */
  readonly results: readonly LimitResult[];
}

export interface Store {
  /** 'memory', 'redis', or a custom store's name; shown in logs. */
  readonly name: string;
  /** Resolves with the store's decision; rejects only when the store itself failed. */
  evaluate(request: StoreRequest): Promise<StoreResult>;
  /** Deletes the state under these keys. */
  reset(keys: readonly string[]): Promise<void>;
}
