// Which Hono route a request is in or will reach, read from Hono's matched routes (never the raw URL).
import type { Context } from 'hono';
import { matchedRoutes } from 'hono/route';

/** Marks Floodgate's middleware, so an app-level one can see that a route has its own. */
export const FLOODGATE = Symbol.for('floodgate.hono.middleware');

/** Hono's name for the handler a sub-app with its own onError wraps (`app.route()`); read to see through the wrapper. */
const COMPOSED_HANDLER = '__COMPOSED_HANDLER';

type Handler = ((...args: unknown[]) => unknown) & { [COMPOSED_HANDLER]?: Handler; [FLOODGATE]?: true };

/** The handler the app registered, through the wrappers `app.route()` adds. */
function registered(handler: Handler): Handler {
  let h = handler;
  while (h[COMPOSED_HANDLER]) h = h[COMPOSED_HANDLER];
  return h;
}

/** Where a Floodgate middleware stands in this request's chain. */
export interface Location {
  /** The route pattern that keys the bucket ('/users/:id'); undefined when the request matches no route. */
  readonly route: string | undefined;
  /** True when a Floodgate middleware later in the chain is the route's own: this one steps aside. */
  readonly deferred: boolean;
}

const UNMATCHED: Location = { route: undefined, deferred: false };
const DEFERRED: Location = { route: undefined, deferred: true };

/**
 * Registered with a method (`app.post('/login', limiter.route(...), handler)`): the middleware's own
 * pattern. Mounted with `app.use()` (method 'ALL'): the first entry after it that is a route, one
 * registered with a method or, for `app.all()`, a handler that takes no `next` (Hono's own test for
 * a middleware is `handler.length > 1`). Middleware mounted with `use` (cors, logger, `/api/*`)
 * is not a route: a request that reaches none is unmatched, whatever its URL.
 */
export function locate(c: Context): Location {
  const routes = matchedRoutes(c);
  const index = c.req.routeIndex;
  const own = routes[index];
  if (own && own.method !== 'ALL') return { route: own.path, deferred: false };
  for (let i = index + 1; i < routes.length; i++) {
    const entry = routes[i];
    const handler = registered(entry.handler as Handler);
    // A route with a Floodgate middleware of its own is decided there, once, not twice.
    if (handler[FLOODGATE]) return DEFERRED;
    if (entry.method !== 'ALL' || handler.length < 2) return { route: entry.path, deferred: false };
  }
  return UNMATCHED;
}
