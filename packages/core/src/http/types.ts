// The HTTP pipeline's shapes: what an adapter gets back, the limiter it holds, and what the steps share (one built pipeline, one request's context).
import type { Decision } from '../model/decision';
import type { FormatHeadersOptions, HeaderPair } from '../headers/format-headers';
import type { Health, HealthOptions } from '../observe/health';
import type { Identify, Identity, RequestFacts } from '../identity';
import type { EngineLimiter, Limiter } from '../engine/limiter';
import type { Family } from './family';
import type { ResolvedExtraKey } from './extra-keys';
import type { HttpRateLimitOptions, ResolvedHttpOptions } from './resolve-http-options';
import type { Reservation } from '../model/settle';
import type { Usage } from '../model/usage';
import type { Holds } from './shape-options';
import type { OverrideLimits, OverrideOptions, OverrideRecord } from '../engine/overrides';

/** Units a request drew from one subject, to give back when it should not count. */
export interface Charge {
  readonly limiter: EngineLimiter;
  readonly subject: string;
  readonly scope: string;
  /** The store's clock when it charged (Decision.at): a refund undoes exactly that charge. */
  readonly at: number;
  /** The extra key's name; undefined for the request's own identity. */
  readonly name?: string;
}

/** Where failed `resetOnSuccess` resets are reported (see ResetLog in charges.ts). */
export interface ResetReport {
  succeeded(): void;
  failed(charge: Charge, error: unknown): void;
}

/** What an adapter does with one request. */
export interface HttpResult {
  /** Undefined for 400 (a malformed extra key), 401 (an unknown API key with `unknownKey: 'reject'`) and for an exempt request (`allowList`, `skip`). */
  readonly decision: Decision | undefined;
  /** 'next': serve it (headers still apply); 429: limited; 503: store failed with failMode 'closed'; 401: unknown API key; 400: a malformed extra key (docs/auth.md). */
  readonly status: 'next' | 400 | 401 | 429 | 503;
  /** Set these on the response in every case, in this order. */
  readonly headers: readonly HeaderPair[];
  /** For 400, 401, 429 and 503: the body to send; a string when it is the default problem+json. */
  readonly body?: unknown;
  /** Set when the body is the default problem+json; otherwise the framework picks. */
  readonly contentType?: string;
  /**
   * Set when the adapter should write this response itself, straight to Node's response (a default
   * problem+json body with `respondDirectly` on): every header of it, `headers` plus Content-Type
   * and Content-Length, as one flat [name, value, name, value, ...] list for `res.writeHead`.
   */
  readonly direct?: readonly string[];
  /**
   * Set when the decision depends on how the response turns out (`countOnly`): the adapter calls
   * it once, when the response has finished, with its status code (undefined when the connection
   * closed before the response finished, which counts as a failure). Never throws.
   */
  readonly finish?: (status: number | undefined) => void;
  /** @deprecated Renamed `finish` (the same function; `settle` names reserve-then-settle only). */
  readonly settle?: (status: number | undefined) => void;
  /**
   * Set for an admitted request whose limiter has the `settle` option: its reserved cost (the
   * route's `cost`, the estimate), to settle with the actual one once the handler knows it. The
   * adapters hand it to the handler (`req.floodgate`, docs/quotas.md#reserve-then-settle).
   */
  readonly reservation?: Reservation;
}

export interface HttpLimiter<Req = unknown> {
  readonly options: ResolvedHttpOptions<Req>;
  readonly limiter: Limiter;
  /** Decides one request. Rejects only when a cost or key function fails or returns a bad cost. */
  handle(facts: RequestFacts, request: Req): Promise<HttpResult>;
  /** The same decision, returned synchronously when nothing had to wait (adapters use it to answer a blocked caller at once). */
  handleNow(facts: RequestFacts, request: Req): HttpResult | Promise<HttpResult>;
  /**
   * A limiter for one route: these overrides merged over the global options, on the same store.
   * false: no limit. `label` names the route in errors (e.g. 'POST /login'); default: the caller's
   * source location.
   */
  route(overrides: HttpRateLimitOptions<Req> | false | undefined, label?: string): HttpLimiter<Req> | null;
  /** The bucket scope: the group, `METHOD /pattern` (HEAD counts as GET; `ALL /pattern` for an all-method route; `<other> /pattern` for a token that names no registered method), or '<unmatched>' when no route matched. */
  scopeOf(facts: Pick<RequestFacts, 'method' | 'route' | 'allMethods'>): string;
  /**
   * Claims this scope's buckets on the store now (else at its first request): throws
   * FG_BUCKET_CONFLICT when another limiter counts them under another definition. Adapters that
   * know their routes at registration (Fastify) call it there.
   */
  claim(scope: string): void;
  /**
   * A usage route's answer for each request (a `GET /usage`-style route): the caller's own use of
   * `routes` ('METHOD /pattern' as the framework matches them; default: this limiter's group) under
   * this limiter, keyed on the identity the limiter itself resolves. Throws FG_INVALID_OPTION for
   * bad `routes`, now.
   */
  usageRoute(routes?: readonly string[]): UsageRoute;
  /**
   * A snapshot for a health route, over this limiter and every route, group, plan and extra-key
   * limiter built from the same `rateLimit(...)`: per store the breaker state, last error and
   * counts. `healthy` is false while any store's breaker is not closed. The stores' raw error
   * messages and warnings only with `{ detail: true }`, for a private endpoint. See docs/operations.md.
   */
  health(options?: HealthOptions): Health;
  /**
   * Sets the limits of one caller on one route for `ttlMs`, on every instance at the next decision
   * (needs `overrides: true`; docs/runtime-limits.md#overrides). Rejects with FG_INVALID_OPTION for a
   * bad target or limits, FG_OVERRIDES_OFF without `overrides`, or the store's error.
   */
  override(target: OverrideTarget, limits: OverrideLimits, options: Omit<OverrideOptions, 'scope'>): Promise<OverrideRecord>;
  /** Removes a caller's override on a route. */
  clearOverride(target: OverrideTarget): Promise<void>;
  /** Overrides on this store and prefix that have not expired. */
  overrides(): Promise<OverrideRecord[]>;
}

/** What createHttpLimiter is told besides the options. */
export interface HttpLimiterContext {
  /** Names this limiter in errors (FG_BUCKET_CONFLICT); default: the caller's source location. */
  readonly label?: string;
}

/** An extra key ready for requests: its limiter, and its scopes claimed once each. */
export interface ExtraKeyLimiter<Req> {
  readonly name: string;
  readonly key: ResolvedExtraKey<Req>['key'];
  readonly limiter: EngineLimiter;
  /** Claims the buckets of this key in `scope` (`<route scope>#<name>`) the first time it is seen. */
  claim(scope: string): void;
}

/**
 * One limiter's pipeline (from createHttpLimiter, a route or a group), built once: everything a
 * step reads besides the request itself.
 */
export interface Pipeline<Req> {
  readonly o: ResolvedHttpOptions<Req>;
  /** The route's limiter (an API key's plan may replace it: `limiterFor`). */
  readonly limiter: EngineLimiter;
  readonly identify: Identify;
  readonly family: Family;
  /** Whether identify can look a key up (resolveKey): only then does it take the block-cache hook. */
  readonly lookups: boolean;
  /** No extra keys and no `countOnly`: a request's charges need not be tracked. */
  readonly plain: boolean;
  readonly extras: readonly ExtraKeyLimiter<Req>[];
  /** Header options for a decision that is enforced (with Retry-After) and for one that is not. */
  readonly enforced: FormatHeadersOptions;
  readonly served: FormatHeadersOptions;
  /** The bucket scope of a request; see HttpLimiter.scopeOf. */
  scopeOf(facts: Pick<RequestFacts, 'method' | 'route' | 'allMethods'>): string;
  /** Claims a scope's buckets the first time it is seen (FG_BUCKET_CONFLICT on a clash). */
  claim(scope: string): void;
  /** The limiter for an identity: its plan's (resolveKey's `limits`) or the route's. */
  limiterFor(identity: Identity): EngineLimiter;
  /** Reports failed `resetOnSuccess` resets (once per run of failures). */
  readonly resets: ResetReport;
  /** FG_COUNTED_TWICE: marks and checks the first requests of each scope; undefined when off (or shadow). */
  readonly countedTwice: ((request: unknown, scope: string) => void) | undefined;
  /** Shaping (option `shape`): the requests this route holds now; undefined when it does not shape. */
  readonly holds: Holds | undefined;
}

/**
 * One request on its way through the steps. `cost` and `scope` are set as soon as they are known,
 * and the context is itself the `{ cost, scope }` the limiter is called with; `identity` is set by
 * the identity step (see Identified).
 */
export interface RequestContext<Req> {
  readonly pipe: Pipeline<Req>;
  readonly facts: RequestFacts;
  readonly request: Req;
  cost: number;
  scope: string;
  identity: Identity | undefined;
}

/** A request context once its identity is known: what the decision and response steps take. */
export interface Identified<Req> extends RequestContext<Req> {
  identity: Identity;
}

/** What a usage route answers: 200 with the caller's usage as JSON, 401 for a key resolveKey rejects, 503 when the store failed. */
export interface UsageAnswer {
  readonly status: 200 | 401 | 503;
  /** JSON: `{ routes: [{ route, policies: [{ policy, limit, used, remaining, windowMs, resetMs, resetsAt }] }] }` (resetsAt an ISO 8601 instant), or a problem+json. */
  readonly body: string;
  readonly contentType: string;
  /** The usage as an object (200 only), for an adapter or app that sends it its own way. */
  readonly usage?: { readonly routes: readonly RouteUsage[] };
}

/** One route's usage in a usage route's answer. */
export interface RouteUsage {
  /** The route as the app named it ('POST /v1/chat'), or the group. */
  readonly route: string;
  readonly policies: readonly (Omit<Usage['policies'][number], 'resetsAt'> & { readonly resetsAt: string })[];
}

/** A usage route for one limiter: answers the caller of each request with their usage of `routes`. */
export type UsageRoute = (facts: RequestFacts, request: unknown) => Promise<UsageAnswer>;

/** Who an override is for: exactly one of `ip`, `apiKey` or `key` (what a `key` function returns), and the route. */
export interface OverrideTarget {
  /** A client address: keyed as requests from it are (IPv4-mapped as IPv4, IPv6 on its /64 by default). */
  readonly ip?: string;
  /** A raw API key: keyed on its digest, as requests carrying it are (the raw key is never stored). */
  readonly apiKey?: string;
  /** What the limiter's `key` function returns for the caller. */
  readonly key?: string;
  /**
   * The route, as the framework matches it: 'GET /v1/chat' ('ALL /x' for an all-method route). Not
   * needed on a limiter with a `group` (its bucket is the group's). Required otherwise.
   */
  readonly route?: string;
  /**
   * With no ip, apiKey or key: a broad override. `route` alone: every caller of that route; `all: true`
   * (no route): every caller of every route on this store and prefix. Applied by each instance
   * within `overrides.pollMs` (default 1 s).
   */
  readonly all?: true;
}
