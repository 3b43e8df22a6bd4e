// The usage view: a subject's use of every limit, read without consuming (limiter.usage, the adapters' usage routes).
import type { LimitDecision } from './decision';

/** One limit's use by one subject, now. */
export interface PolicyUsage {
  /** The limit's name (RateLimit-Policy's). */
  readonly policy: string;
  /** The limit (window algorithms) or burst (token-bucket, gcra); for the in-flight limit, the slots. */
  readonly limit: number;
  /** Units counted now: `limit - remaining` (a subject in debt shows the whole limit used). */
  readonly used: number;
  readonly remaining: number;
  /** The window; for token-bucket and gcra, the time to refill a full burst; for the in-flight limit, the lease. */
  readonly windowMs: number;
  /** ms until the limit is fully restored if no further request arrives (0: nothing counted). */
  readonly resetMs: number;
  /** When that is, in the store's clock (ms since the epoch). */
  readonly resetsAt: number;
  /** Set for the in-flight limit: it counts requests in flight. */
  readonly quotaUnit?: 'concurrent-requests';
}

/** A subject's use of every limit of one scope (`limiter.usage`). */
export interface Usage {
  /** The scope read (for the HTTP adapters: `METHOD /pattern`, or the group). */
  readonly scope: string;
  /** The store's clock when it answered (ms since the epoch). */
  readonly at: number;
  /** One entry per limit, in the order of the options (the in-flight limit last). */
  readonly policies: readonly PolicyUsage[];
}

/** A usage view from a cost-0 peek's figures, read at `at` (the store's clock). */
export function usageOf(scope: string, at: number, limits: readonly LimitDecision[]): Usage {
  const policies = limits.map((l): PolicyUsage => {
    const u: PolicyUsage = {
      policy: l.policy,
      limit: l.limit,
      used: Math.max(0, l.limit - l.remaining),
      remaining: l.remaining,
      windowMs: l.windowMs,
      resetMs: l.resetMs,
      resetsAt: at + l.resetMs,
    };
    return l.quotaUnit ? { ...u, quotaUnit: l.quotaUnit } : u;
  });
  return { scope, at, policies };
}
