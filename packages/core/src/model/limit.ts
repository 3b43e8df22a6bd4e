// One limit as the limiter enforces it: parsed by options.ts, read by decisions, the failure policy and the stores.
import type { LimitKind, StoreLimit } from '../algorithms/registry';

export interface ResolvedLimit {
  readonly name: string;
  /** An algorithm, or 'concurrency' for the in-flight limit (option `concurrency`). */
  readonly algorithm: LimitKind;
  /** The limit (window algorithms) or burst (token-bucket, gcra). */
  readonly limit: number;
  /** The window; for token-bucket and gcra, the time to refill a full burst. */
  readonly windowMs: number;
  /** What the store is sent. */
  readonly store: StoreLimit;
  /** The last part of this limit's key. */
  readonly keySuffix: string;
}

/** A limit's window in words, for messages: '60000 ms', or a calendar window's id ('month@America/New_York@d1 00:00:00'). */
export function windowWords(l: ResolvedLimit): string {
  const calendar = 'windowMs' in l.store ? l.store.calendar : undefined;
  return calendar ? calendar.id : `${l.windowMs} ms`;
}
