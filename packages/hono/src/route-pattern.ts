// Which Hono route a request is in or will reach, read from Hono's matched routes (never the raw URL).
import type { Context } from 'hono';
import { matchedRoutes } from 'hono/route';

/** Marks Floodgate's middleware, so an app-level one can see that a route has its own. */
export const FLOODGATE = Symbol.for('floodgate.hono.middleware');

/** Hono's name for the handler a sub-app with its own onError wraps (`app.route()`); read to see through the wrapper. */
const COMPOSED_HANDLER = '__COMPOSED_HANDLER';

/** What a Floodgate middleware carries under FLOODGATE: the top-level rateLimit() it was made from, and its own limiter (null: exempt). */
export interface Mark {
  readonly root: object;
  readonly http: object | null;
}

type Handler = ((...args: unknown[]) => unknown) & { [COMPOSED_HANDLER]?: Handler; [FLOODGATE]?: Mark };

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
  /** True when that route was registered with `app.all()`: one bucket for every method (Hono lets any method token through). */
  readonly allMethods?: boolean;
  /** True when a Floodgate middleware later in the chain is the route's own: this one steps aside. */
  readonly deferred: boolean;
  /** When deferred: that middleware's mark, and the route it is mounted on ('POST /login'). */
  readonly own?: { readonly mark: Mark; readonly route: string };
}

const UNMATCHED: Location = { route: undefined, deferred: false };

type Entry = ReturnType<typeof matchedRoutes>[number];

/** A route, not a middleware: registered with a method or, for `app.all()`, a handler that takes no `next` (Hono's own test for a middleware is `handler.length > 1`). */
const isRoute = (entry: Entry, handler: Handler) => entry.method !== 'ALL' || handler.length < 2;

/**
 * Whether the Floodgate middleware at `i` is a route's own: registered with a method
 * (`app.post('/login', limiter.route(...), handler)`), or with `app.all()` on the path of the route
 * that follows it. One mounted with `app.use()` (another app-level limiter, or one on `/api/*`) is
 * not: both limit the request, as two app-level limiters do in Express (FG_COUNTED_TWICE).
 */
function routesOwn(routes: readonly Entry[], i: number): boolean {
  const entry = routes[i];
  if (entry.method !== 'ALL') return true;
  for (let j = i + 1; j < routes.length; j++) {
    const handler = registered(routes[j].handler as Handler);
    if (handler[FLOODGATE]) continue;
    return isRoute(routes[j], handler) && routes[j].path === entry.path;
  }
  return false;
}

/**
 * Registered with a method (`app.post('/login', limiter.route(...), handler)`): the middleware's own
 * pattern. Mounted with `app.use()` (method 'ALL'): the first entry after it that is a route.
 * Middleware mounted with `use` (cors, logger, `/api/*`) is not a route: a request that reaches
 * none is unmatched, whatever its URL.
 */
export function locate(c: Context): Location {
  const routes = matchedRoutes(c);
  const index = c.req.routeIndex;
  const own = routes[index];
  if (own && own.method !== 'ALL') return { route: own.path, deferred: false };
  for (let i = index + 1; i < routes.length; i++) {
    const entry = routes[i];
    const handler = registered(entry.handler as Handler);
    const mark = handler[FLOODGATE];
    // A route with a Floodgate middleware of its own is decided there, once, not twice.
    if (mark && routesOwn(routes, i)) return { route: undefined, deferred: true, own: { mark, route: `${c.req.method} ${entry.path}` } };
    if (!mark && isRoute(entry, handler)) return { route: entry.path, allMethods: entry.method === 'ALL', deferred: false };
  }
  return UNMATCHED;
}
