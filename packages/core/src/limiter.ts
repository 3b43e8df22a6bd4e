// createLimiter: the framework-free engine. Cheapest check first: block cache, then one atomic store call.
import { BlockCache } from './block-cache';
import { bareDecision, toDecision, type Decision } from './decision';
import { FloodgateError } from './errors';
import { subjectKey } from './keys';
import { resolveLimiterOptions, type LimiterOptions, type ResolvedLimiterOptions } from './options';
import type { StoreRequest } from './stores/store';

export interface CreateLimiterOptions extends LimiterOptions {
  /**
   * Remember denied subjects locally until their retry time, answering them without a store call.
   * Bounded to this many subjects; 0 turns it off. Default 10_000.
   */
  blockCacheSize?: number;
  /** Monotonic clock in ms for local caches (not for decisions: the store keeps time). Default performance.now. */
  clock?: () => number;
}

export interface ConsumeOptions {
  /** Units this request draws; a whole number from 0. Default 1. */
  cost?: number;
  /** The bucket's scope, e.g. the route pattern; separate scopes are separate buckets. Default ''. */
  scope?: string;
}

export interface Limiter {
  /** Draws `cost` units for this subject, all-or-nothing over every limit. Resolves; never rejects for a limit. */
  consume(subject: string, options?: ConsumeOptions): Promise<Decision>;
  /** What a request of `cost` (default 1) would get now, without drawing anything. */
  peek(subject: string, options?: ConsumeOptions): Promise<Decision>;
  /** Forgets this subject's counts in this scope. */
  reset(subject: string, options?: Pick<ConsumeOptions, 'scope'>): Promise<void>;
  readonly options: ResolvedLimiterOptions;
}

export function createLimiter(options: CreateLimiterOptions = {}): Limiter {
  const resolved = resolveLimiterOptions(options);
  const { store, prefix, limits, maxCost } = resolved;
  const storeLimits = limits.map((l) => l.store);
  const clock = options.clock ?? (() => performance.now());
  const blockCacheSize = options.blockCacheSize ?? 10_000;
  const blocks = blockCacheSize > 0 ? new BlockCache<Decision>(blockCacheSize, clock) : undefined;

  function keysOf(subject: string, scope: string) {
    const base = subjectKey(prefix, scope, String(subject));
    return { base, keys: limits.map((l) => `${base}:${l.keySuffix}`) };
  }

  async function decide(subject: string, opts: ConsumeOptions, mode: StoreRequest['mode']): Promise<Decision> {
    const cost = opts.cost ?? 1;
    if (typeof cost !== 'number' || !Number.isInteger(cost) || cost < 0) {
      throw new FloodgateError('FG_INVALID_COST', `Invalid cost: got ${String(cost)}; expected a whole number from 0.`);
    }
    const { base, keys } = keysOf(subject, opts.scope ?? '');
    // A cost above the smallest limit can never be admitted: look, never draw (reason cost-exceeds-limit).
    if (cost > maxCost) mode = 'peek';
    if (blocks && mode === 'consume') {
      const hit = blocks.get(base, cost);
      if (hit) return { ...hit.decision, reason: 'blocked', retryAfterMs: Math.ceil(hit.leftMs) };
    }
    const result = await store.evaluate({ keys, limits: storeLimits, cost, mode });
    const decision = toDecision(limits, result.allowed, result.results, cost);
    if (blocks && mode === 'consume' && !decision.allowed && decision.retryAfterMs > 0) {
      blocks.set(base, cost, decision.retryAfterMs, decision);
    }
    return decision;
  }

  return {
    options: resolved,
    consume: (subject, opts = {}) => decide(subject, opts, 'consume'),
    peek: (subject, opts = {}) => decide(subject, opts, 'peek'),
    async reset(subject, opts = {}) {
      const { base, keys } = keysOf(subject, opts.scope ?? '');
      blocks?.delete(base);
      await store.reset(keys);
    },
  };
}

export { bareDecision };
