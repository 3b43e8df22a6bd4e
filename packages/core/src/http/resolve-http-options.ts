// HTTP options: every adapter option parsed once, and per-route overrides merged with the global ones, here only.
import type { Decision } from '../model/decision';
import { invalidOption } from '../base/errors';
import { HEADER_DIALECTS, type HeaderDialect } from '../headers/format-headers';
import { createAllowList, type AllowList } from '../identity/allow-list';
import { resolveFleet, type FleetOptions, type ResolvedFleet } from '../shedding/fleet-shedder';
import { resolvePriority, resolveShedding, type Priority, type ResolvedShedding, type SheddingOptions } from '../shedding/load-shedder';
import { resolveExtraKeys, type ExtraKeyOptions, type ResolvedExtraKey } from './extra-keys';
import { IDENTITY_OPTION_NAMES, resolveIdentityOptions, type Identity, type IdentityOptions, type ResolvedIdentityOptions } from '../identity';
import { LIMITER_OPTION_NAMES, resolveLimiterOptions, type CreateLimiterOptions, type LimitOptions, type ResolvedLimiterOptions } from '../engine/options';
import { DYNAMIC_FIELDS, type AnsweredLimit, type LimitContext } from '../engine/dynamic-limits';
import type { Duration } from '../base/duration';
import { resolveShape, type ResolvedShape, type ShapeOptions } from './shape-options';
import { bool, checkOptionNames, oneOf, optionalFunction, optionNames, staticCost, wholeNumber } from '../base/validate';

/** A response is a failure when its status is 400 or above, or when it never finished. */
const defaultIsFailure = ({ status }: { status: number | undefined }) => status === undefined || status >= 400;

/** What the hooks and the 429 handler are told about one decision. */
export interface RateLimitEvent<Req = unknown> {
  /** The framework's request (Express req, Fastify request, Koa ctx). */
  readonly request: Req;
  readonly decision: Decision;
  /** The bucket's scope: the group name, `METHOD /route/:pattern`, or '<unmatched>'. */
  readonly scope: string;
  /** Units the request draws; 0 for a request shed by `shedding` or `fleet` (`decision.reason` 'shed'): it drew nothing. */
  readonly cost: number;
  /**
   * What the bucket was keyed on. Never the raw key or address. 'none' for a shed request
   * (`decision.reason` 'shed'): shedding answers before the caller is identified, so that it costs
   * no lookup.
   */
  readonly identity: Identity['kind'] | 'none';
  /** True when the decision was only reported, never enforced. Shedding is always enforced: false for a shed request. */
  readonly shadow: boolean;
}

/**
 * A limit's value for one request: a number, or a function of the framework's request (and the
 * subject it is counted as) returning one, sync or async: express-rate-limit's `limit: (req) => n`
 * and @fastify/rate-limit's `max`/`timeWindow` functions, renamed (docs/migrating.md). Called after
 * the block cache; each distinct answer is its own bounded limit state (docs/runtime-limits.md).
 */
export type RequestValue<Req, T> = T | ((request: Req, subject: string) => T | PromiseLike<T>);

/** One limit of an adapter's `limits`: LimitOptions whose numbers may be functions of the request. */
export interface HttpLimitOptions<Req = unknown> extends Omit<LimitOptions, 'limit' | 'windowMs' | 'burst' | 'refillPerSecond'> {
  limit?: RequestValue<Req, number>;
  windowMs?: RequestValue<Req, Duration>;
  burst?: RequestValue<Req, number>;
  refillPerSecond?: RequestValue<Req, number>;
}

/** The limit options an adapter takes, where each number may be a function of the request. */
export interface HttpLimitFields<Req = unknown> {
  /** Units per window (or burst): a number, or a function of the request (sync or async). See RequestValue. Default 60. */
  limit?: RequestValue<Req, number>;
  /** The window: ms, a duration string, or a function of the request returning one. Default 60_000. */
  windowMs?: RequestValue<Req, Duration>;
  /** token-bucket and gcra: the burst, or a function of the request. Default `limit`. */
  burst?: RequestValue<Req, number>;
  /** token-bucket and gcra: units restored per second, or a function of the request. */
  refillPerSecond?: RequestValue<Req, number>;
  /** Several limits (each number may be a function of the request), or a function of the request returning the list. */
  limits?: HttpLimitOptions<Req>[] | ((request: Req, subject: string) => AnsweredLimit[] | PromiseLike<AnsweredLimit[]>);
}

/**
 * The options every adapter takes, globally and per route: everything createLimiter takes (limits,
 * store, prefix, failMode, ...) and createIdentify takes (apiKeyHeaders, resolveKey, ...), plus these.
 */
export interface HttpRateLimitOptions<Req = unknown>
  extends Omit<CreateLimiterOptions, keyof HttpLimitFields>,
    HttpLimitFields<Req>,
    Omit<IdentityOptions, 'logger' | 'clock'> {
  /**
   * Units one request draws: a whole number from 0, or a function of the framework's request that
   * returns one. A function that throws or returns anything else fails the request with
   * FG_INVALID_COST through the framework's error handling. Default 1.
   */
  cost?: number | ((request: Req) => number | Promise<number>);
  /**
   * A custom identity: the bucket is keyed on what this returns (hashed before it reaches a store).
   * Return undefined (or '') to fall back to the default identity (API key, else client IP).
   * Default: the default identity.
   */
  key?: (request: Req) => string | number | undefined | Promise<string | number | undefined>;
  /**
   * Share one bucket between every route with this group name (`[A-Za-z0-9_.-]{1,64}`).
   * Default: none, so each route (method + pattern) has its own bucket.
   */
  group?: string;
  /**
   * Which rate-limit headers to send: 'draft-6' (RateLimit-Limit/-Remaining/-Reset), 'draft-10'
   * (RateLimit-Policy and RateLimit), 'legacy' (X-RateLimit-*), a list of them, true for
   * 'draft-6', or false for none. Retry-After is sent on 429 and 503 either way. Default 'draft-6'.
   */
  headers?: boolean | HeaderDialect | readonly HeaderDialect[];
  /**
   * Up to this many ms of random delay added to Retry-After (before rounding up to whole seconds),
   * so that limited clients do not all return at once. 0 turns it off. Default 1000.
   */
  retryAfterJitterMs?: number;
  /** Evaluate, report through the hooks and headers, and never block. Default false. */
  shadow?: boolean;
  /**
   * Exempts one request: return true and it is served without being counted or limited (no
   * headers, `rateLimit` unset). For your own health checker or an internal caller you can
   * recognise (an mTLS identity, a signed header you verify). Never decide from what any client can
   * write (a header value alone). A function that throws fails the request through the framework's
   * error handling. Default: none.
   */
  skip?: (request: Req) => boolean | Promise<boolean>;
  /**
   * Client IPs and CIDR ranges ('10.0.0.0/8', '2001:db8::/32') this limiter never counts or refuses,
   * matched against the IP the framework reports under its trust-proxy setting. Behind a proxy you
   * do not trust (or trust too much), that IP can be the proxy's or a client-written one: an
   * allowlisted proxy address then exempts every client. Default: none.
   */
  allowList?: readonly string[];
  /**
   * Count a request only by how its response turns out: 'failed' counts failures only (a login:
   * successful logins are free, guesses are limited), 'succeeded' counts successes only. The units
   * are still drawn before the handler runs, so parallel requests cannot all pass the check; when
   * the response says the request should not count, they are given back atomically (a refund in
   * the store). A response cut off before it finished counts as failed. Default: every request counts.
   */
  countOnly?: 'failed' | 'succeeded';
  /** With `countOnly`: whether a response is a failure. Default: status 400 or above, or no status (cut off). */
  isFailure?: (outcome: { status: number | undefined; request: Req }) => boolean;
  /**
   * More subjects each request is counted against, each with its own limits, decided together
   * with the default identity (the IP or verified key): all admit, or none is charged (the ones
   * that did are refunded). E.g. failed logins per account name beside per IP:
   * `[{ name: 'account', key: (req) => req.body?.username, limit: 5, windowMs: '15m' }]`.
   * Default: none.
   */
  extraKeys?: ExtraKeyOptions<Req>[];
  /**
   * With `countOnly: 'failed'`: the extra keys (by name) whose counts a success clears, e.g.
   * `['account']`: a user who finally logs in starts afresh. Trade-off: an attacker who owns one
   * account can clear its count by logging in to it, which is why per-IP limits stay. Default: none.
   */
  resetOnSuccess?: readonly string[];
  /**
   * Write Floodgate's own error responses (the default problem+json 429, 503 and 401) straight to
   * Node's response (`res.writeHead` + `res.end`), skipping the framework's reply pipeline, so that
   * a flood of 429s costs no more than the route itself. Headers already set on the response (e.g.
   * by a CORS middleware or hook that ran before the limiter) are kept. What is skipped: Fastify's
   * onSend hooks and serialisation (onResponse hooks and logging still run), Express's ETag, and
   * changes a Koa middleware makes after `await next()` (headers are already sent). Set false to
   * send them through the framework like any other response. A `handler`'s body always goes
   * through the framework. Default true.
   */
  respondDirectly?: boolean;
  /**
   * Replaces the default 429 body (application/problem+json): return the body to send, which the
   * framework serialises as it would any other body. The status and headers stay. Default: none.
   */
  handler?: (request: Req, event: RateLimitEvent<Req>) => unknown;
  /**
   * Called for every denied decision (also in shadow mode), including requests shed by `shedding`
   * or `fleet` (503, `decision.reason` 'shed'). Default: none.
   */
  onLimited?: (event: RateLimitEvent<Req>) => void;
  /** Called for every decision, including shed ones. Not for exempt requests (`skip`, `allowList`). Default: none. */
  onDecision?: (event: RateLimitEvent<Req>) => void;
  /**
   * The route's class for load shedding (`shedding`): 'background' is shed first, then 'default';
   * 'critical' never. Default 'default'.
   */
  priority?: Priority;
  /**
   * Worker utilisation shedding, set once on the app-level limiter: this instance watches its own
   * event loop and, while it is overloaded, answers 503 (problem type temporary-reduced-capacity)
   * to the lowest priority classes first, with hysteresis, before any identity lookup or store
   * call. `true` takes the defaults. See docs/concurrency.md. Default: off.
   */
  shedding?: boolean | SheddingOptions;
  /**
   * Fleet load shedding, set once on the app-level limiter: one budget of requests in flight across
   * every instance on the store, of which 'default' may fill `shares.default` and 'background'
   * `shares.background`, 'critical' all of it. A request the budget refuses gets 503 (problem type
   * temporary-reduced-capacity). One more store call per request. See docs/concurrency.md. Default: off.
   */
  fleet?: FleetOptions;
  /**
   * Shaping: a request over its rate is held until it conforms instead of refused, its slot
   * reserved in the store in the same atomic step as the decision (so the fleet on one store keeps
   * the rate); past `maxDelayMs`, or with `maxWaiting` already held on this instance, the 429 as
   * without it. Limits must be 'gcra' or 'token-bucket'. See docs/shaping.md. Default: off.
   */
  shape?: ShapeOptions | false;
}

export interface ResolvedHttpOptions<Req = unknown> {
  /** The limiter's options, parsed (limits, store, prefix, failure policy, ...). */
  readonly limiter: ResolvedLimiterOptions;
  /** The identity options, parsed. */
  readonly identity: ResolvedIdentityOptions;
  readonly cost: number | ((request: Req) => number | Promise<number>);
  readonly key: HttpRateLimitOptions<Req>['key'];
  readonly group: string | undefined;
  readonly dialects: readonly HeaderDialect[];
  readonly retryAfterJitterMs: number;
  readonly shadow: boolean;
  readonly skip: HttpRateLimitOptions<Req>['skip'];
  /** The parsed allow list; undefined when none. */
  readonly allowList: AllowList | undefined;
  readonly countOnly: 'failed' | 'succeeded' | undefined;
  readonly isFailure: (outcome: { status: number | undefined; request: Req }) => boolean;
  readonly extraKeys: readonly ResolvedExtraKey<Req>[];
  /** Extra keys (by name) a success resets. */
  readonly resetOnSuccess: ReadonlySet<string>;
  readonly respondDirectly: boolean;
  readonly handler: HttpRateLimitOptions<Req>['handler'];
  readonly onLimited: HttpRateLimitOptions<Req>['onLimited'];
  readonly onDecision: HttpRateLimitOptions<Req>['onDecision'];
  readonly priority: Priority;
  /** Set on the app-level options only (a route cannot set it). */
  readonly shedding: ResolvedShedding | undefined;
  /** Set on the app-level options only (a route cannot set it). */
  readonly fleet: ResolvedFleet | undefined;
  /** Set when the route shapes (option `shape`). */
  readonly shape: ResolvedShape | undefined;
}

/** The limit when none is given: 60 requests per minute per caller per route. */
export const DEFAULT_LIMIT = 60;

type HttpOnly = Omit<HttpRateLimitOptions, keyof CreateLimiterOptions | keyof IdentityOptions>;
/** Options the HTTP layer reads itself; the rest go to the limiter and identity. */
export const HTTP_OPTION_NAMES = optionNames<HttpOnly>()([
  'cost',
  'key',
  'group',
  'headers',
  'retryAfterJitterMs',
  'shadow',
  'skip',
  'allowList',
  'countOnly',
  'isFailure',
  'extraKeys',
  'resetOnSuccess',
  'respondDirectly',
  'handler',
  'onLimited',
  'onDecision',
  'priority',
  'shedding',
  'fleet',
  'shape',
]);
/** Identity options the HTTP layer passes on; `logger` and `clock` are the limiter's, shared. */
const IDENTITY_ONLY = IDENTITY_OPTION_NAMES.filter((k) => k !== 'logger' && k !== 'clock');
/** Every option an adapter takes, globally and per route. */
export const ALL_HTTP_OPTION_NAMES: readonly string[] = [...HTTP_OPTION_NAMES, ...LIMITER_OPTION_NAMES, ...IDENTITY_ONLY];
/** Which part of the pipeline an option belongs to, for deciding what a route's overrides rebuild. */
export const LIMITER_NAMES: ReadonlySet<string> = new Set(LIMITER_OPTION_NAMES);
export const IDENTITY_NAMES: ReadonlySet<string> = new Set(IDENTITY_OPTION_NAMES);
/** The options of a single top-level limit: a route that sets `limits` drops them from the global options. */
const SINGLE_LIMIT_OPTIONS = ['limit', 'burst', 'refillPerSecond', 'name'] as const;

function dialectsOf(value: HttpRateLimitOptions['headers']): HeaderDialect[] {
  if (value === undefined || value === true) return ['draft-6'];
  if (value === false) return [];
  const list = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list)) invalidOption('headers', value, `true, false, one of ${HEADER_DIALECTS.join(', ')}, or a list of them`);
  for (const d of list) {
    if (!HEADER_DIALECTS.includes(d)) invalidOption('headers', d, `one of ${HEADER_DIALECTS.join(', ')}`);
  }
  return [...new Set(list)];
}

/** A function of the request as core calls limit functions: (subject, context), the request in context.request. */
const ofRequest =
  (f: (request: unknown, subject: string) => unknown) =>
  (subject: string, context: LimitContext): unknown =>
    f(context.request, subject);

/** The limiter's options with each limit function of the request turned into core's form (a new object: the app's is never mutated). */
function forCore(options: Record<string, unknown>): Record<string, unknown> {
  const wrap = (l: Record<string, unknown>) => {
    if (!l || typeof l !== 'object' || !DYNAMIC_FIELDS.some((f) => typeof l[f] === 'function')) return l;
    const out = { ...l };
    for (const f of DYNAMIC_FIELDS) if (typeof out[f] === 'function') out[f] = ofRequest(out[f] as (r: unknown, s: string) => unknown);
    return out;
  };
  const out = wrap(options);
  if (typeof options.limits === 'function') return { ...out, limits: ofRequest(options.limits as (r: unknown, s: string) => unknown) };
  if (Array.isArray(options.limits)) return { ...out, limits: options.limits.map(wrap) };
  return out;
}

function pick(from: Record<string, unknown>, names: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of names) if (from[k] !== undefined) out[k] = from[k];
  return out;
}

/**
 * A route's options over the ones it inherits (the app's, or a NestJS controller's): the route's
 * own values win; a route's `limits` drops the inherited single limit and the reverse; a route's
 * window of one kind (a calendar `window` or a `windowMs`) replaces the inherited one of the other.
 * Undefined values are ignored. Every adapter merges its levels with this one rule.
 */
export function mergeRouteOptions<O extends object>(inherited: O, route: O): O {
  const merged: Record<string, unknown> = { ...(inherited as Record<string, unknown>) };
  const own = route as Record<string, unknown>;
  if (own.limits !== undefined) for (const k of SINGLE_LIMIT_OPTIONS) delete merged[k];
  if (own.limit !== undefined || own.burst !== undefined) delete merged.limits;
  if (own.window !== undefined) delete merged.windowMs;
  if (own.windowMs !== undefined) delete merged.window;
  for (const [k, v] of Object.entries(own)) if (v !== undefined) merged[k] = v;
  return merged as O;
}

/**
 * Merges a route's overrides over the global options and parses the result, down one path: the
 * names are checked (FG_UNKNOWN_OPTION), then the options are split into the limiter's, identity's
 * and the HTTP layer's own, each parsed once by its own validators. A route that sets `limits`
 * drops the global single limit (and the reverse), so the two never clash; everything else is
 * overridden key by key. The caller's objects are never mutated. `where` names the options in
 * errors ('rateLimit', 'GET /login config.rateLimit').
 */
export function resolveHttpOptions<Req = unknown>(
  global: HttpRateLimitOptions<Req> = {},
  route?: HttpRateLimitOptions<Req>,
  where = 'rateLimit',
): ResolvedHttpOptions<Req> {
  if (!global || typeof global !== 'object' || Array.isArray(global)) invalidOption('options', global, 'an object');
  if (route !== undefined && (!route || typeof route !== 'object' || Array.isArray(route))) {
    invalidOption('route options', route, 'an object, or false for no limit');
  }
  checkOptionNames(`${where} options`, global, ALL_HTTP_OPTION_NAMES);
  if (route) checkOptionNames(`${where} route options`, route, ALL_HTTP_OPTION_NAMES);
  if (route?.shedding !== undefined) invalidOption('shedding', route.shedding, 'no `shedding` on a route: set it once on the app-level limiter, and `priority` per route');
  if (route?.fleet !== undefined) invalidOption('fleet', route.fleet, 'no `fleet` on a route: set it once on the app-level limiter, and `priority` per route');
  const merged = (route ? mergeRouteOptions(global, route) : { ...global }) as Record<string, unknown>;
  const options = merged as HttpRateLimitOptions<Req>;

  const limiterOptions = forCore(pick(merged, LIMITER_OPTION_NAMES)) as CreateLimiterOptions;
  if (limiterOptions.limit === undefined && limiterOptions.burst === undefined && limiterOptions.limits === undefined) {
    limiterOptions.limit = DEFAULT_LIMIT;
  }
  const limiter = resolveLimiterOptions(limiterOptions, where, false);
  const identity = resolveIdentityOptions(
    { ...pick(merged, IDENTITY_ONLY), logger: limiter.failure.logger, clock: limiter.clock } as IdentityOptions,
    false,
  );

  const countOnly = options.countOnly === undefined ? undefined : oneOf('countOnly', options.countOnly, ['failed', 'succeeded'], 'failed');
  if (options.isFailure !== undefined && countOnly === undefined) invalidOption('isFailure', options.isFailure, 'to be set only together with `countOnly`');
  // countOnly gives the reserved cost back after the response, which a settle has already replaced: the two would both adjust one charge.
  if (countOnly !== undefined && limiter.settle.enabled) invalidOption('settle', options.settle, 'no `settle` together with `countOnly` (a settle already charges what the request cost)');
  const extraKeys = resolveExtraKeys<Req>(options.extraKeys, limiter);
  const resetOnSuccess = new Set<string>();
  if (options.resetOnSuccess !== undefined) {
    if (countOnly !== 'failed') invalidOption('resetOnSuccess', options.resetOnSuccess, "to be set only together with countOnly: 'failed'");
    if (!Array.isArray(options.resetOnSuccess)) invalidOption('resetOnSuccess', options.resetOnSuccess, 'an array of extra key names');
    for (const name of options.resetOnSuccess) {
      if (!extraKeys.some((k) => k.name === name)) invalidOption('resetOnSuccess', name, `one of the extraKeys names (${extraKeys.map((k) => k.name).join(', ') || 'none given'})`);
      resetOnSuccess.add(name);
    }
  }
  const cost = typeof options.cost === 'function' ? options.cost : staticCost('cost', options.cost ?? 1, limiter.maxCost);
  if (options.group !== undefined && (typeof options.group !== 'string' || !/^[A-Za-z0-9_.-]{1,64}$/.test(options.group))) {
    invalidOption('group', options.group, 'a string matching [A-Za-z0-9_.-]{1,64}');
  }
  return {
    limiter,
    identity,
    cost,
    key: optionalFunction('key', options.key),
    group: options.group,
    dialects: dialectsOf(options.headers),
    retryAfterJitterMs: wholeNumber('retryAfterJitterMs', options.retryAfterJitterMs ?? 1000, 0, 3_600_000),
    shadow: bool('shadow', options.shadow, false),
    skip: optionalFunction('skip', options.skip),
    allowList: createAllowList(options.allowList),
    countOnly,
    isFailure: optionalFunction('isFailure', options.isFailure) ?? defaultIsFailure,
    extraKeys,
    resetOnSuccess,
    respondDirectly: bool('respondDirectly', options.respondDirectly, true),
    handler: optionalFunction('handler', options.handler),
    onLimited: optionalFunction('onLimited', options.onLimited),
    onDecision: optionalFunction('onDecision', options.onDecision),
    priority: resolvePriority(options.priority),
    shedding: resolveShedding(options.shedding),
    fleet: resolveFleet(options.fleet),
    shape: resolveShape(options.shape, limiter),
  };
}
