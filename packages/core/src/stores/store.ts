// The store contract: evaluate every limit of one subject atomically, all-or-nothing.
import type { StoreLimit } from '../algorithms/registry';
import type { LimitResult } from '../algorithms/types';

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
  /**
   * Set when the store bounds each call itself: the longest a call can take, in ms (RedisStore: its
   * `timeoutMs`; MemoryStore: 0, it never waits). Left unset, the limiter puts its own `timeoutMs` on every call.
   */
  readonly timeoutMs?: number;
  /** Configuration risks found at construction (e.g. a client that resends commands); the limiter logs them once. */
  readonly warnings?: readonly string[];
  /**
   * Calls `listener` each time the store's connection becomes ready again (RedisStore: the client's
   * 'ready' event). The circuit breaker then probes at once instead of waiting out its cool-down.
   * Optional: without it, the breaker probes on its timer only.
   */
  onReady?(listener: () => void): void;
  /** Resolves with the store's decision; rejects only when the store itself failed. */
  evaluate(request: StoreRequest): Promise<StoreResult>;
  /** Deletes the state under these keys. */
  reset(keys: readonly string[]): Promise<void>;
}
