// One limiter's pipeline, built once from its parsed options: the route's limiter, identity, plans, extra keys, scopes and claims.
import type { Identify } from '../identity';
import { limiterFrom, type EngineLimiter } from '../engine/limiter';
import { claimBuckets } from './bucket-claims';
import { ResetLog } from './charges';
import type { Family } from './family';
import { plansOf } from './plans';
import type { ResolvedHttpOptions } from './resolve-http-options';
import { claimsOnce, scopesOf } from './scope';
import { countedTwiceCheck } from './counted-twice';
import { Holds } from './shape-options';
import type { ExtraKeyLimiter, Pipeline } from './types';

/** What a pipeline shares with the one it was derived from (a route keeps the global limiter unless it overrides one of its options). */
export interface PipelineParts {
  readonly limiter: EngineLimiter;
  readonly identify: Identify;
  readonly family: Family;
}

/** Builds the pipeline a limiter's requests go through; `label` names it in FG_BUCKET_CONFLICT. */
export function pipelineOf<Req>(o: ResolvedHttpOptions<Req>, { limiter, identify, family }: PipelineParts, label: string): Pipeline<Req> {
  const { store, prefix, limits } = o.limiter;
  // A group's bucket is known now: claim it at registration. A route's scope is known at its first request.
  if (o.group !== undefined) claimBuckets(store, prefix, o.group, limits, label);
  const extras: ExtraKeyLimiter<Req>[] = o.extraKeys.map((k) => ({
    name: k.name,
    key: k.key,
    limiter: family.join(limiterFrom(k.limiter)),
    claim: claimsOnce(store, prefix, k.limiter.limits, label),
  }));
  const pipe: Pipeline<Req> = {
    o,
    limiter,
    identify,
    family,
    lookups: o.identity.resolveKey !== undefined,
    plain: o.extraKeys.length === 0 && !o.countOnly,
    extras,
    enforced: { retryAfter: true, retryAfterJitterMs: o.retryAfterJitterMs },
    served: { retryAfter: false, retryAfterJitterMs: o.retryAfterJitterMs },
    scopeOf: scopesOf(o.group),
    // The first claim of a scope also tells the family who counts it (usage routes read it there).
    claim: claimsOnce(store, prefix, limits, label, (scope) => family.counts(scope, pipe)),
    limiterFor: plansOf(o, limiter, family),
    resets: new ResetLog(o.limiter.failure.logger),
    countedTwice: countedTwiceCheck(label, o.shadow, o.limiter.failure.logger, o.limiter.warnings),
    // Shadow mode never blocks, so it never holds either: an over-rate request is reported and served.
    holds: o.shape && !o.shadow ? new Holds(o.shape) : undefined,
  };
  if (o.group !== undefined) family.counts(o.group, pipe);
  return pipe;
}
