// @floodgate/express: rateLimit(options) middleware for Express 4 and 5. The core decides; this translates.
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
  type UsageAnswer,
  signalOnClose,
  stepAside,
  trustProxyOf,
  overrideFace,
  type OverrideFace,
} from '@floodgate/core/http';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { FLOODGATE, answersEveryMethod, currentRoutePattern, firstRoute, isRouteLevel, ownLimiters } from './route-pattern';

declare global {
  namespace Express {
    interface Request {
      /** Floodgate's decision for this request; unset when no limiter ran (or for a 401 unknown API key). */
      rateLimit?: Decision;
      /** With the `settle` option: this request's reservation; `req.floodgate.settle(actual)` charges the actual cost (docs/quotas.md). */
      floodgate?: Reservation;
    }
  }
}

/**
 * Everything `createLimiter` and identity take (limit, windowMs, limits, store, prefix, failMode,
 * apiKeyHeaders, ...) plus `cost`, `key`, `group`, `headers`, `retryAfterJitterMs`, `shadow`,
 * `handler` and the hooks `onLimited` and `onDecision`; functions get the Express `req`.
 * See docs/adapters.md for every option and its default.
 */
export type RateLimitOptions = HttpRateLimitOptions<Request>;
export type { Decision, Health, HealthOptions, RateLimitEvent, Reservation, SettleResult } from '@floodgate/core';

/** An Express middleware that also makes route-level middlewares from its own options. */
export interface RateLimitMiddleware extends RequestHandler, OverrideFace {
  /**
   * A middleware for one route: `overrides` merged over this one's options, on the same store.
   * `false` exempts the route from an app-level limiter. Mount it on the route:
   * `router.post('/reports', limiter.route({ cost: 10 }), handler)`.
   */
  route(overrides: RateLimitOptions | false): RateLimitMiddleware;
  /** The health snapshot of this limiter and every route made from it, for a `/healthz` route (docs/operations.md). */
  health(options?: HealthOptions): Health;
  /**
   * A handler for a `GET /usage`-style route: answers the caller's own usage of `routes` ('POST
   * /v1/chat', as Express matches them; default: this limiter's group) as JSON, keyed on the
   * identity this limiter resolves (docs/quotas.md#usage-route).
   */
  usageRoute(routes?: string[]): RequestHandler;
}

function sendUsage(res: Response, answer: UsageAnswer): void {
  res.status(answer.status).setHeader('Content-Type', answer.contentType);
  res.end(answer.body);
}

function send(res: Response, result: HttpResult): void {
  res.status(result.status as number);
  if (result.contentType) res.setHeader('Content-Type', result.contentType);
  if (result.body === undefined) res.end();
  else res.send(result.body);
}

/** How Express's `trust proxy` makes req.ip: true trusts every hop; false (the default) and 0 none. */
function trustOf(req: Request): RequestFacts['trustProxy'] {
  const setting: unknown = req.app?.settings?.['trust proxy'];
  return trustProxyOf(setting);
}

function facts(req: Request, route: string | undefined, allMethods = false, signal?: AbortSignal): RequestFacts {
  return { ip: req.ip, headers: req.headers, method: req.method, route, allMethods, trustProxy: trustOf(req), signal };
}

/** What a Floodgate middleware carries: the top-level rateLimit() it was made from, and its own limiter. */
interface Mark {
  readonly root: object;
  readonly http: HttpLimiter<Request> | null;
}

function middleware(http: HttpLimiter<Request> | null, health: (options?: HealthOptions) => Health, root: object): RateLimitMiddleware {
  const handler = function floodgate(req: Request, res: Response, next: NextFunction): void {
    if (!http) return next();
    let pattern: string | undefined;
    let allMethods: boolean;
    if (isRouteLevel(req, handler)) {
      pattern = currentRoutePattern(req);
      allMethods = answersEveryMethod(req.route);
    } else {
      // Mounted app-wide: Express has not routed yet, so read its routers for the route it will reach.
      const found = firstRoute(req, handler);
      // A route with a Floodgate middleware of its own is decided there, once, not twice.
      if (found && stepAside(http, root, ownLimiters<Mark>(found.route), `${req.method} ${found.pattern}`)) return next();
      pattern = found?.pattern;
      allMethods = answersEveryMethod(found?.route);
    }
    // Synchronous when nothing had to wait (a blocked caller's 429 goes out at once).
    // A shaped route holds requests: one that goes away gives its slot back.
    const result = http.handleNow(facts(req, pattern, allMethods, http.options.shape && signalOnClose(res)), req);
    if (isThenable(result)) result.then((r) => apply(r, req, res, next), next);
    else apply(result, req, res, next);
  } as RateLimitMiddleware;
  const mark: Mark = { root, http };
  Object.defineProperty(handler, FLOODGATE, { value: mark });
  handler.route = (overrides) => middleware(http ? http.route(overrides) : null, health, root);
  handler.health = health;
  Object.assign(handler, overrideFace(http));
  handler.usageRoute = (routes) => {
    if (!http) return (_req, _res, next) => next();
    const answer = http.usageRoute(routes);
    return (req, res, next) => void answer(facts(req, undefined), req).then((a) => sendUsage(res, a), next);
  };
  return handler;
}

function apply(result: HttpResult, req: Request, res: Response, next: NextFunction): void {
  req.rateLimit = result.decision;
  if (result.reservation) req.floodgate = result.reservation;
  if (result.status === 'next') {
    const headers = result.headers;
    for (let i = 0; i < headers.length; i++) res.setHeader(headers[i][0], headers[i][1]);
    finishOnResponse(res, result); // countOnly: the outcome decides whether the request counts
    return next();
  }
  if (result.direct) {
    // Floodgate's own problem+json: straight to Node (headers set earlier on res are merged in).
    res.writeHead(result.status, result.direct as string[]);
    res.end(result.body as string);
    return;
  }
  try {
    for (const [name, value] of result.headers) res.setHeader(name, value);
    send(res, result);
  } catch (error) {
    next(error); // e.g. a handler's body Express cannot send
  }
}

/**
 * Rate limiting for Express 4 and 5. App-wide, `app.use(rateLimit(options))` keys each request on
 * the route it will reach (method + full pattern, e.g. 'GET /users/:id'); per route, with the same
 * store and limits, `router.post('/reports', limiter.route({ cost: 10 }), handler)`. A top-level
 * `rateLimit()` mounted on a route is a limiter of its own (its own store and limits; an app-level
 * one skips that route, and warns FG_ROUTE_OWN_LIMITER).
 * A request that matches no route is limited in one '<unmatched>' bucket per caller.
 */
export function rateLimit(options: RateLimitOptions = {}): RateLimitMiddleware {
  const http = createHttpLimiter<Request>(options);
  return middleware(http, http.health, http);
}
