// @floodgate/koa: rateLimit(options) as Koa middleware, on the app or on one @koa/router route. The core decides.
import {
  createHttpLimiter,
  isThenable,
  finishOnResponse,
  type Decision,
  type HttpLimiter,
  type Health,
  type HealthOptions,
  type HttpRateLimitOptions,
  type HttpResult,
  type RequestFacts,
  type Reservation,
  stepAside,
  trustProxyOf,
  signalOnClose,
  overrideFace,
  type OverrideFace,
} from '@floodgate/core/http';
import { METHODS } from 'node:http';
import type { Context, Middleware, Next } from 'koa';

declare module 'koa' {
  interface DefaultState {
    /** Floodgate's decision for this request; unset when no limiter ran (or for a 401 unknown API key). */
    rateLimit?: Decision;
    /** With the `settle` option: this request's reservation; `ctx.state.floodgate.settle(actual)` charges the actual cost (docs/quotas.md). */
    floodgate?: Reservation;
  }
}

/**
 * Everything `createLimiter` and identity take (limit, windowMs, limits, store, prefix, failMode,
 * apiKeyHeaders, ...) plus `cost`, `key`, `group`, `headers`, `retryAfterJitterMs`, `shadow`,
 * `handler` and the hooks `onLimited` and `onDecision`; functions get the Koa `ctx`.
 * See docs/adapters.md for every option and its default.
 */
export type RateLimitOptions = HttpRateLimitOptions<Context>;
export type { Decision, Health, HealthOptions, RateLimitEvent, Reservation, SettleResult } from '@floodgate/core';

/** Koa middleware that also makes route-level middlewares from its own options. */
export interface RateLimitMiddleware extends Middleware, OverrideFace {
  /**
   * A middleware for one route: `overrides` merged over this one's options, on the same store.
   * `false` exempts the route from an app-level limiter: `router.get('/health', limiter.route(false), h)`.
   */
  route(overrides: RateLimitOptions | false): RateLimitMiddleware;
  /** The health snapshot of this limiter and every route made from it, for a `/healthz` route (docs/operations.md). */
  health(options?: HealthOptions): Health;
  /**
   * Middleware for a `GET /usage`-style route: answers the caller's own usage of `routes` ('POST
   * /v1/chat', as @koa/router matches them; default: this limiter's group) as JSON, keyed on the
   * identity this limiter resolves (docs/quotas.md#usage-route).
   */
  usageRoute(routes?: string[]): Middleware;
}

/** Marks Floodgate's middleware, so an app-level one can see that a route has its own. */
const FLOODGATE = Symbol.for('floodgate.koa.middleware');

/** The parts of @koa/router (v12 to v15) read here: its layers and its public match(). */
interface RouterLayer {
  path: string;
  methods: string[];
  stack: unknown[];
}
interface Router {
  opts?: { routerPath?: string };
  match(path: string, method: string): { pathAndMethod: RouterLayer[] };
  matchHost?(host: string): boolean;
}
type RoutedContext = Context & { matched?: RouterLayer[]; _matchedRoute?: string };

/** What a Floodgate middleware carries: the top-level rateLimit() it was made from, and its own limiter. */
interface Mark {
  readonly root: object;
  readonly http: HttpLimiter<Context> | null;
}

const isRoute = (layer: RouterLayer, method: string) => layer.methods.includes(method);
/** Route layers registered for every method Node knows (`router.all()` registers http.METHODS), found once per layer. */
const everyMethod = new WeakMap<RouterLayer, boolean>();
/** True for a route layer of `router.all()`: one bucket for all its methods. */
function answersEveryMethod(layer: RouterLayer | undefined): boolean {
  if (!layer) return false;
  let all = everyMethod.get(layer);
  if (all === undefined) everyMethod.set(layer, (all = METHODS.every((m) => layer.methods.includes(m))));
  return all;
}
/** The marks of the Floodgate middlewares a route layer runs itself. */
const ownLimiters = (layer: RouterLayer): Mark[] =>
  layer.stack.filter((fn) => typeof fn === 'function' && FLOODGATE in fn).map((fn) => (fn as Record<symbol, Mark>)[FLOODGATE]);

/** Before any router ran: ask the app's routers (their dispatch functions carry `.router`) which route will match. */
function upcomingRoute(ctx: Context): RouterLayer | undefined {
  for (const fn of ctx.app.middleware as { router?: Router }[]) {
    const router = fn.router;
    if (!router || typeof router.match !== 'function' || (router.matchHost && !router.matchHost(ctx.host))) continue;
    const found = router.match(router.opts?.routerPath || ctx.path, ctx.method).pathAndMethod.find((l) => isRoute(l, ctx.method));
    if (found) return found;
  }
  return undefined;
}

/** The route layer this request is in or will reach, and whether `mw` runs inside that layer's own stack. */
function locate(ctx: RoutedContext, mw: unknown): { layer?: RouterLayer; own: boolean } {
  if (!ctx.matched) return { layer: upcomingRoute(ctx), own: false };
  const current = ctx.matched.find((l) => l.path === ctx._matchedRoute && isRoute(l, ctx.method) && l.stack.includes(mw));
  if (current) return { layer: current, own: true };
  return { layer: ctx.matched.find((l) => isRoute(l, ctx.method)), own: false };
}

/** How Koa's proxy settings make ctx.ip: app.proxy with maxIpsCount 0 (the default) takes the first X-Forwarded-For entry. */
function trustOf(ctx: Context): RequestFacts['trustProxy'] {
  const app = ctx.app;
  return trustProxyOf(app.proxy ? app.maxIpsCount || true : false);
}

function facts(ctx: Context, layer: RouterLayer | undefined, signal?: AbortSignal): RequestFacts {
  return { ip: ctx.ip, headers: ctx.headers, method: ctx.method, route: layer?.path, allMethods: answersEveryMethod(layer), trustProxy: trustOf(ctx), signal };
}

/** Applies one result to the response: headers, then the request goes on or is answered here. */
function finish(ctx: Context, result: HttpResult, next: Next): Promise<unknown> {
  ctx.state.rateLimit = result.decision;
  if (result.reservation) ctx.state.floodgate = result.reservation;
  if (result.direct) {
    // Floodgate's own problem+json, straight to Node: Koa's respond() is skipped (headers set
    // earlier on ctx are merged in); ctx.status still says 429 to upstream middleware.
    ctx.status = result.status as number;
    ctx.respond = false;
    ctx.res.writeHead(result.status as number, result.direct as string[]);
    ctx.res.end(result.body as string);
    return DONE;
  }
  const headers = result.headers;
  for (let i = 0; i < headers.length; i++) ctx.set(headers[i][0], headers[i][1]);
  if (result.status === 'next') {
    finishOnResponse(ctx.res, result); // countOnly: the outcome decides whether the request counts
    return next();
  }
  ctx.status = result.status;
  ctx.body = result.body ?? '';
  if (result.contentType) ctx.type = result.contentType;
  return DONE;
}

const DONE: Promise<undefined> = Promise.resolve(undefined);

function middleware(http: HttpLimiter<Context> | null, health: (options?: HealthOptions) => Health, root: object): RateLimitMiddleware {
  // Not an async function: a decision that needed no waiting (the memory store, a blocked caller)
  // goes on to next() in the same turn, with no promise of its own. It always returns a promise.
  const mw = function floodgate(ctx: Context, next: Next): Promise<unknown> {
    if (!http) return next();
    try {
      const { layer, own } = locate(ctx, mw);
      // A route with a Floodgate middleware of its own is decided there, once, not twice.
      if (!own && layer && stepAside(http, root, ownLimiters(layer), `${ctx.method} ${layer.path}`)) return next();
      // A shaped route holds requests: one that goes away gives its slot back.
      const pending = http.handleNow(facts(ctx, layer, http.options.shape && signalOnClose(ctx.res)), ctx);
      if (isThenable(pending)) return pending.then((result) => finish(ctx, result, next));
      return finish(ctx, pending, next);
    } catch (error) {
      return Promise.reject(error);
    }
  } as RateLimitMiddleware;
  const mark: Mark = { root, http };
  Object.defineProperty(mw, FLOODGATE, { value: mark });
  mw.route = (overrides) => middleware(http ? http.route(overrides) : null, health, root);
  mw.health = health;
  Object.assign(mw, overrideFace(http));
  mw.usageRoute = (routes) => {
    if (!http) return (_ctx, next) => next();
    const answer = http.usageRoute(routes);
    return async (ctx) => {
      const a = await answer(facts(ctx, undefined), ctx);
      ctx.status = a.status;
      ctx.type = a.contentType;
      ctx.body = a.body;
    };
  };
  return mw;
}

/**
 * Rate limiting for Koa. On the app, `app.use(rateLimit(options))` before the router keys each
 * request on the @koa/router route it will reach (method + pattern); on one route with the same
 * store, `router.post('/reports', limiter.route({ cost: 10 }), handler)`; a limiter of the route's
 * own (an app-level one skips that route, and warns FG_ROUTE_OWN_LIMITER beside one),
 * `router.post('/login', rateLimit({ store, limit: 5, windowMs: '1m', failMode: 'closed' }), handler)`.
 * A request that matches no route is limited in one '<unmatched>' bucket per caller.
 */
export function rateLimit(options: RateLimitOptions = {}): RateLimitMiddleware {
  const http = createHttpLimiter<Context>(options);
  return middleware(http, http.health, http);
}
