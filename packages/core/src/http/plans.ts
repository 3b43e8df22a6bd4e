// Step: the limiter an identity is counted by: its API key's plan (resolveKey's `limits`) or the route's.
import type { Identity } from '../identity';
import { limiterFrom, type EngineLimiter } from '../engine/limiter';
import { maxCostOf } from '../engine/options';
import type { Family } from './family';
import type { ResolvedHttpOptions } from './resolve-http-options';

/** Most plan limiters (API keys whose `resolveKey` answer carries `limits`) kept per route. */
const MAX_PLANS = 1000;

/**
 * The plan lookup of one route: a key's own plan replaces the route's limits, one limiter per plan
 * on the same store, built at the plan's first request; past MAX_PLANS the oldest is dropped.
 */
export function plansOf<Req>(o: ResolvedHttpOptions<Req>, route: EngineLimiter, family: Family): (identity: Identity) => EngineLimiter {
  const plans = new Map<string, EngineLimiter>();
  return (identity) => {
    if (!identity.resolvedLimits || !identity.plan) return route;
    let planned = plans.get(identity.plan);
    if (planned) return planned;
    // The plan was validated when resolveKey answered; the route's other options apply to it.
    planned = limiterFrom({ ...o.limiter, limits: identity.resolvedLimits, maxCost: maxCostOf(identity.resolvedLimits), madeForRequest: true, dynamic: undefined });
    if (plans.size >= MAX_PLANS) {
      const [oldest, dropped] = plans.entries().next().value as [string, EngineLimiter];
      family.leave(dropped);
      plans.delete(oldest);
    }
    plans.set(identity.plan, family.join(planned));
    return planned;
  };
}
