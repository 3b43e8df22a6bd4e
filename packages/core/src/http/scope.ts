// Step: the bucket scope of a request (group, or method and route pattern), and each scope's buckets claimed once.
import type { RequestFacts } from '../identity';
import type { ResolvedLimit } from '../model/limit';
import { NestedMemo } from '../base/memo';
import type { Store } from '../stores/store';
import { claimBuckets } from './bucket-claims';

/** The scope of requests that matched no route: one bucket per caller, so raw URLs never mint buckets. */
export const UNMATCHED_SCOPE = '<unmatched>';
/** The method word of an all-method route's scope (`ALL /pattern`): one bucket whatever the method. */
export const ALL_METHODS = 'ALL';
/** The method word for a token that names no registered HTTP method: every such token of a route shares one bucket. */
export const OTHER_METHOD = '<other>';
/** Method and route pairs whose scope one limiter keeps built, per generation (base/memo.ts: at most twice this). */
const SCOPES_MAX = 10_000;
/** Most scopes one limiter remembers as claimed; past it a new scope is claimed on each of its requests (still checked, never stored here). */
const CLAIMED_MAX = 10_000;

/**
 * The HTTP methods a scope names (IANA's registry as Node's parser accepts it, and QUERY); any
 * other token (`FOO`, `XYZ123`: runtimes on the Fetch API let a client send any) is OTHER_METHOD,
 * so method tokens cannot mint scopes whatever a framework lets through.
 */
const METHODS: ReadonlySet<string> = new Set(
  ('ACL BIND CHECKOUT CONNECT COPY DELETE GET HEAD LINK LOCK M-SEARCH MERGE MKACTIVITY MKCALENDAR MKCOL MOVE NOTIFY ' +
    'OPTIONS PATCH POST PROPFIND PROPPATCH PURGE PUT QUERY REBIND REPORT SEARCH SOURCE SUBSCRIBE TRACE UNBIND UNLINK UNLOCK UNSUBSCRIBE').split(' '),
);

/** The method word of a scope: ALL for an all-method route, GET for HEAD (HEAD is GET without a body: one bucket, or HEAD would double a caller's GET quota), OTHER_METHOD for an unregistered token. */
function methodWord(method: string, allMethods: boolean | undefined): string {
  if (allMethods) return ALL_METHODS;
  const upper = method.toUpperCase();
  if (upper === 'HEAD') return 'GET';
  return METHODS.has(upper) || upper === ALL_METHODS ? upper : OTHER_METHOD;
}

/**
 * The scope function of one limiter: its group when it has one, else `METHOD /pattern` built once
 * per method and pattern (patterns come from the app's routes, not from URLs; bounded all the same).
 * A route registered for every method (`facts.allMethods`) is `ALL /pattern`, whatever the method:
 * else each method would be a fresh budget on it.
 */
export function scopesOf(group: string | undefined): (facts: Pick<RequestFacts, 'method' | 'route' | 'allMethods'>) => string {
  if (group !== undefined) return () => group;
  const scopes = new NestedMemo<string>(SCOPES_MAX);
  // The last answer, found by comparing the two strings (a route's requests come in runs of one method).
  let lastKey = '';
  let lastRoute = '';
  let lastScope = '';
  return (facts) => {
    const route = facts.route;
    if (route === undefined) return UNMATCHED_SCOPE;
    // Keyed on the method word once it is ALL: an all-method route's requests hold one entry, whatever tokens they send.
    const key = facts.allMethods ? ALL_METHODS : facts.method;
    if (key === lastKey && route === lastRoute && lastScope !== '') return lastScope;
    let scope = scopes.get(key, route);
    if (scope === undefined) {
      scope = `${methodWord(facts.method, facts.allMethods)} ${route}`;
      scopes.set(key, route, scope);
    }
    lastKey = key;
    lastRoute = route;
    lastScope = scope;
    return scope;
  };
}

/** A claim function that claims a scope's buckets for these limits the first time it is given that scope. */
export function claimsOnce(store: Store, prefix: string, limits: readonly ResolvedLimit[], label: string, first?: (scope: string) => void): (scope: string) => void {
  const claimed = new Set<string>();
  // The last scope found claimed: the next request of the same route skips the Set.
  let last: string | undefined;
  return (scope) => {
    if (scope === last) return;
    if (claimed.has(scope)) {
      last = scope;
      return;
    }
    claimBuckets(store, prefix, scope, limits, label);
    if (claimed.size >= CLAIMED_MAX) return;
    claimed.add(scope);
    first?.(scope);
  };
}
