// One app's limiter: built once from FloodgateModule's options, with a route limiter per handler built once from its decorators.
import { HttpException } from '@nestjs/common';
import {
  createHttpLimiter,
  FloodgateError,
  invalidOption,
  isThenable,
  mergeRouteOptions,
  finishOnResponse,
  withoutStack,
  type Health,
  type HealthOptions,
  type HttpLimiter,
  type HttpResult,
  type RouteUsage,
  type UsageRoute,
  signalOnClose,
  type OverrideLimits,
  type OverrideOptions,
  type OverrideRecord,
  type OverrideTarget,
} from '@floodgate/core/http';
import { RATE_LIMIT_OPTIONS, SKIP_RATE_LIMIT, type RateLimitOptions } from './decorators';
import { EXCEPTION_FILTERS_METADATA } from './nest-metadata';
import { rejectThrottlerNames } from './peer-names';
import { facts, problemOnReply, rawResponse, setHeaders, writeDirect, type ExpressAppLike, type PlatformRequest, type PlatformResponse, type TrustProxy } from './platform';
import { RateLimitException } from './rate-limit-exception';

/** FloodgateModule's options: every `@RateLimit()` option (the defaults of every route), plus these. */
export interface FloodgateModuleOptions<Req = any> extends RateLimitOptions<Req> {
  /**
   * Limit requests that match no route (Nest answers them 404 before any guard runs) in one
   * '<unmatched>' bucket per caller with these options, so scanning for URLs costs quota without
   * minting buckets. Default true.
   */
  unmatched?: boolean;
}

const DECIDED = Symbol('floodgate.decided');
type Controller = abstract new (...args: never[]) => unknown;

/** The app's global exception filters, as Nest's ApplicationConfig holds them (`useGlobalFilters`, APP_FILTER). */
export interface GlobalFilters {
  getGlobalFilters(): readonly unknown[];
  getGlobalRequestFilters(): readonly unknown[];
}

export class FloodgateService {
  /** The module-level pipeline; route limiters are built from it, on its store. */
  readonly http: HttpLimiter<any>;
  /** Whether requests that match no route are limited (the `unmatched` option). */
  readonly limitsUnmatched: boolean;
  /** The Fastify platform's trust-proxy setting, read at module init (FloodgateModule); the Express platform's is read per request. */
  fastifyTrust: TrustProxy;
  /** The Express platform's app, set at module init: gateway messages read its `trust proxy` setting for the handshake (ws-context.ts). */
  expressApp: ExpressAppLike | undefined;
  /** Route limiters by controller, then handler; null for an exempt handler. */
  private readonly routes = new Map<Controller, Map<Function, HttpLimiter<any> | null>>();
  /**
   * Set at module init on the Express platform when the app's global filters can be read: with
   * `respondDirectly` left unset, a denial no exception filter of the app would see is written
   * straight to Node (writesDirect). Unset: every denial without `respondDirectly: true` goes
   * through Nest's exception filters.
   */
  globalFilters: GlobalFilters | undefined;
  /** Limiters whose `respondDirectly: true` was written (on the module or the route): always written straight to Node. */
  private readonly alwaysDirect = new WeakSet<HttpLimiter<any>>();
  /** Whether the module's options wrote `respondDirectly` (true or false). */
  private readonly directChosen: boolean | undefined;
  /** Whether a handler or its controller has `@UseFilters()`, by controller, then handler. */
  private readonly ownFilters = new Map<Controller, Map<Function, boolean>>();

  constructor(options: FloodgateModuleOptions = {}) {
    rejectThrottlerNames(options, 'FloodgateModule options');
    const { unmatched, ...rest } = options;
    if (unmatched !== undefined && typeof unmatched !== 'boolean') invalidOption('unmatched', unmatched, 'true or false');
    this.limitsUnmatched = unmatched ?? true;
    // Left unset, the core renders the direct write's head too: used where no filter would see the
    // denial (writesDirect), else the exception goes through Nest's filters.
    this.directChosen = rest.respondDirectly;
    this.http = createHttpLimiter({ ...rest, respondDirectly: rest.respondDirectly ?? true }, { label: 'FloodgateModule options' });
    if (rest.respondDirectly === true) this.alwaysDirect.add(this.http);
  }

  /** Sets one caller's limits on one route for `ttlMs`, on every instance at its next decision (needs `overrides: true`; docs/runtime-limits.md#overrides). */
  override(target: OverrideTarget, limits: OverrideLimits, options: Omit<OverrideOptions, 'scope'>): Promise<OverrideRecord> {
    return this.http.override(target, limits, options);
  }

  /** Removes one caller's override on one route. */
  clearOverride(target: OverrideTarget): Promise<void> {
    return this.http.clearOverride(target);
  }

  /** The overrides on this module's store and prefix that have not expired. */
  listOverrides(): Promise<OverrideRecord[]> {
    return this.http.overrides();
  }

  /** The health snapshot of this module's limiters (every route's), for a `/healthz` route (docs/operations.md). */
  health(options?: HealthOptions): Health {
    return this.http.health(options);
  }

  /**
   * For a `GET /usage`-style handler: the caller's own usage of `routes` ('POST /v1/chat', the
   * patterns Nest registered; default: the module's group) as `{ routes: [...] }`, keyed on the
   * identity the limiter resolves; throws HttpException 401 (a key resolveKey rejects) or 503 (the
   * store failed). Each route is read with its own `@RateLimit()` limits once it has been requested
   * (docs/quotas.md#usage-route). `routes` are checked once, at the first call.
   */
  async usage(req: PlatformRequest, routes?: string[]): Promise<{ readonly routes: readonly RouteUsage[] }> {
    const key = routes === undefined ? '' : routes.join('\u0000');
    let route = this.usageRoutes.get(key);
    if (!route) this.usageRoutes.set(key, (route = this.http.usageRoute(routes)));
    const answer = await route(facts(req, undefined, this.fastifyTrust), req);
    if (answer.status !== 200) throw new HttpException(JSON.parse(answer.body) as object, answer.status);
    return answer.usage!;
  }

  private readonly usageRoutes = new Map<string, UsageRoute>();

  /** The limiter of one handler, from its and its controller's decorators, built on first use (FloodgateModule builds every route's at init). */
  limiterFor(controller: Controller, handler: Function): HttpLimiter<any> | null {
    let byHandler = this.routes.get(controller);
    if (!byHandler) this.routes.set(controller, (byHandler = new Map()));
    const known = byHandler.get(handler);
    if (known !== undefined) return known;
    const built = this.build(controller, handler);
    byHandler.set(handler, built);
    return built;
  }

  private build(controller: Controller, handler: Function): HttpLimiter<any> | null {
    const own = Reflect.getMetadata(RATE_LIMIT_OPTIONS, handler) as RateLimitOptions | undefined;
    if (Reflect.getMetadata(SKIP_RATE_LIMIT, handler) === true) return null;
    if (own === undefined && Reflect.getMetadata(SKIP_RATE_LIMIT, controller) === true) return null;
    const shared = Reflect.getMetadata(RATE_LIMIT_OPTIONS, controller) as RateLimitOptions | undefined;
    // The handler's options over its controller's, by core's one merge rule (as a route's over the app's).
    const options = mergeRouteOptions(shared ?? {}, own ?? {});
    // No options of its own: the module's limiter itself (one block cache, one bucket definition).
    if (Object.keys(options).length === 0) return this.http;
    const label = `@RateLimit() on ${controller.name}.${handler.name}`;
    try {
      const limiter = this.http.route(options, label);
      if (limiter && (options.respondDirectly ?? this.directChosen) === true) this.alwaysDirect.add(limiter);
      return limiter;
    } catch (error) {
      // Core's message names the option and the value; this names the handler they were written on.
      if (error instanceof FloodgateError && !error.message.startsWith(label)) error.message = `${label}: ${error.message}`;
      throw error;
    }
  }

  /**
   * Decides one request and applies the result: true to serve it (headers set), or throws
   * RateLimitException. Synchronous when nothing had to wait. A request already decided (the guard
   * both global and on the controller) passes without counting twice.
   */
  decide(limiter: HttpLimiter<any>, req: PlatformRequest, res: PlatformResponse, route: string | undefined, allMethods = false, controller?: Controller, handler?: Function): true | Promise<true> {
    const marked = req as PlatformRequest & { [DECIDED]?: true };
    if (marked[DECIDED]) return true;
    marked[DECIDED] = true;
    // A shaped route holds requests: one that goes away gives its slot back.
    const signal = limiter.options.shape && signalOnClose(rawResponse(res));
    const result = limiter.handleNow(facts(req, route, this.fastifyTrust, allMethods, signal), req);
    if (isThenable(result)) return result.then((r) => apply(r, req, res, r.direct === undefined ? 'filters' : this.answer(limiter, controller, handler)));
    return apply(result, req, res, result.direct === undefined ? 'filters' : this.answer(limiter, controller, handler));
  }

  /**
   * How a denial whose direct head the core rendered is answered: 'direct' with `respondDirectly:
   * true` (written straight to Node; filters still see the exception); left unset, 'unseen' on the
   * Express platform where no exception filter of the app would see it (no global filter or
   * APP_FILTER, no `@UseFilters()` on the handler or its controller), else 'filters'. Where no filter
   * sees it, Nest's default filter would send the same status, headers and body through a stream
   * (a StreamableFile), which cost a 429 about as much as the route itself; it still gets the
   * exception, marked `responded`, and only ends the response.
   */
  private answer(limiter: HttpLimiter<any>, controller: Controller | undefined, handler: Function | undefined): Answer {
    if (this.alwaysDirect.has(limiter)) return 'direct';
    const global = this.globalFilters;
    if (global === undefined || this.directChosen === false) return 'filters';
    if (global.getGlobalFilters().length > 0 || global.getGlobalRequestFilters().length > 0) return 'filters';
    return controller !== undefined && handler !== undefined && this.filtered(controller, handler) ? 'filters' : 'unseen';
  }

  /** Whether `@UseFilters()` is on the handler or its controller (read once per handler). */
  private filtered(controller: Controller, handler: Function): boolean {
    let byHandler = this.ownFilters.get(controller);
    if (!byHandler) this.ownFilters.set(controller, (byHandler = new Map()));
    let known = byHandler.get(handler);
    if (known === undefined) {
      const some = (target: object) => ((Reflect.getMetadata(EXCEPTION_FILTERS_METADATA, target) as unknown[] | undefined)?.length ?? 0) > 0;
      byHandler.set(handler, (known = some(handler) || some(controller)));
    }
    return known;
  }
}

/** How a denial is answered (FloodgateService.answer). */
type Answer = 'filters' | 'direct' | 'unseen';

/** Headers on the response, then serve, or throw the exception Nest's filters answer (written straight to Node first unless `answer` is 'filters'). */
function apply(result: HttpResult, req: PlatformRequest, res: PlatformResponse, answer: Answer): true {
  req.rateLimit = result.decision;
  if (result.reservation) req.floodgate = result.reservation;
  if (answer !== 'filters') {
    writeDirect(res, result);
    // No filter sees an 'unseen' one: its body is the plain problem, not a stream nobody reads.
    throw withoutStack(() => new RateLimitException(result, true, answer === 'unseen'));
  }
  setHeaders(res, result.headers);
  if (result.status === 'next') {
    finishOnResponse(rawResponse(res), result); // countOnly: the outcome decides whether the request counts
    return true;
  }
  const plain = problemOnReply(res, result);
  throw withoutStack(() => new RateLimitException(result, false, plain));
}
