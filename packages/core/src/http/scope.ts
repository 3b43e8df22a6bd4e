// Step: the bucket scope of a request (group, or method and route pattern), and each scope's buckets claimed once.
import type { RequestFacts } from '../identity';
import type { ResolvedLimit } from '../limit';
import { NestedMemo } from '../memo';
import type { Store } from '../stores/store';
import { claimBuckets } from './bucket-claims';

/** The scope of requests that matched no route: one bucket per caller, so raw URLs never mint buckets. */
export const UNMATCHED_SCOPE = '<unmatched>';
/** Most method and route pairs whose scope one limiter keeps built. */
const SCOPES_MAX = 10_000;

/**
 * The scope function of one limiter: its group when it has one, else `METHOD /pattern` built once
 * per method and pattern (patterns come from the app's routes, not from URLs; bounded all the same).
 */
export function scopesOf(group: string | undefined): (facts: Pick<RequestFacts, 'method' | 'route'>) => string {
  if (group !== undefined) return () => group;
  const scopes = new NestedMemo<string>(SCOPES_MAX);
  return (facts) => {
    const route = facts.route;
    if (route === undefined) return UNMATCHED_SCOPE;
    const hit = scopes.get(facts.method, route);
    if (hit !== undefined) return hit;
    const method = facts.method.toUpperCase();
    // HEAD is GET without a body: one bucket, or HEAD would double a caller's GET quota.
    const scope = `${method === 'HEAD' ? 'GET' : method} ${route}`;
    scopes.set(facts.method, route, scope);
    return scope;
  };
}

/** A claim function that claims a scope's buckets for these limits the first time it is given that scope. */
export function claimsOnce(store: Store, prefix: string, limits: readonly ResolvedLimit[], label: string, first?: (scope: string) => void): (scope: string) => void {
  const claimed = new Set<string>();
  return (scope) => {
    if (claimed.has(scope)) return;
    claimBuckets(store, prefix, scope, limits, label);
    claimed.add(scope);
    first?.(scope);
  };
}
