// The warnings adapters raise about how limiters are mounted on routes (FG_ROUTE_OWN_LIMITER, FG_ROUTE_NOT_LIMITED): their words, once.
import type { ResolvedHttpOptions } from './resolve-http-options';
import { warnOnce } from '../base/warnings';
import { windowWords } from '../model/limit';

interface Described {
  readonly options: ResolvedHttpOptions<any>;
}

/** 'memory store, 60 per 60000 ms' */
function describe(http: Described): string {
  const { store, limits } = http.options.limiter;
  return `${store.name} store, ${limits.map((l) => `${l.limit} per ${windowWords(l)}`).join(' and ')}`;
}

/**
 * FG_ROUTE_OWN_LIMITER, written through the app-level limiter's logger: `route` ('POST /reports')
 * mounts a limiter built by a top-level `rateLimit()` rather than the app-level one's `.route()`,
 * on another store, so the app-level limiter skips that route and the route's own store and limits
 * decide alone. A route limiter given the app's own store chose its limits: no warning.
 */
export function warnRouteOwnLimiter(appLevel: Described, own: Described, route: string): void {
  if (own.options.limiter.store === appLevel.options.limiter.store) return;
  warnOnce(
    appLevel.options.limiter.failure.logger,
    appLevel.options.limiter.warnings,
    'FG_ROUTE_OWN_LIMITER',
    `${route} mounts a rateLimit() of its own (${describe(own)}), not one made by the app-level limiter (${describe(appLevel)}): the app-level limiter skips this route, and neither its store nor its limits apply there. For the app limiter's store and limits with this route's overrides, mount limiter.route({ ... }) made from the app-level limiter; a separate limiter on purpose that shares the app's store is not warned about (docs/adapters.md#per-route)`,
  );
}

/**
 * FG_ROUTE_NOT_LIMITED: a route the app's limiter never saw, so no limit applies to it; `why` says
 * how it happened and what fixes it.
 */
export function warnRouteNotLimited(http: Described, route: string, why: string): void {
  warnOnce(http.options.limiter.failure.logger, http.options.limiter.warnings, 'FG_ROUTE_NOT_LIMITED', `${route} is not rate limited: ${why}`);
}

/** What an adapter marks its Floodgate middleware with: the top-level rateLimit() it was made from, and its limiter (null: exempt). */
export interface LimiterMark {
  readonly root: unknown;
  readonly http?: Described | null;
}

/**
 * The step-aside rule, one for every adapter: an app-level limiter steps aside for a route that has
 * a Floodgate limiter of its own (`own`: the marks found on the route), which decides the request
 * once; when that limiter was made by another top-level rateLimit() than `root`, FG_ROUTE_OWN_LIMITER
 * says so. True: step aside (the adapter calls next()).
 */
export function stepAside(appLevel: Described, root: unknown, own: readonly LimiterMark[] | undefined, route: string): boolean {
  if (!own || own.length === 0) return false;
  const apart = own.find((m) => m.root !== root && m.http);
  if (apart) warnRouteOwnLimiter(appLevel, apart.http!, route);
  return true;
}
