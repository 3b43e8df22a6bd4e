// @floodgate/fastify: a Fastify 5 plugin; each route's config.rateLimit is applied once, when the route is registered.
import {
  createHttpLimiter,
  invalidOption,
  isThenable,
  finishOnResponse,
  type Decision,
  type HttpLimiter,
  type HttpResult,
  type Health,
  type HealthOptions,
  type HttpRateLimitOptions,
  type RequestFacts,
  signalOnClose,
  type Reservation,
  warnRouteNotLimited,
  trustProxyOf,
  overrideFace,
  type OverrideFace,
} from '@floodgate/core/http';
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';
import { oneHook } from './one-hook';
import { DIRECT_PLACES, headersOf, isEmpty, lowerCaseAt } from './reply-headers';

/** The request lifecycle hooks the limiter can run in. */
export const RATE_LIMIT_HOOKS = ['onRequest', 'preValidation', 'preHandler'] as const;
export type RateLimitHook = (typeof RATE_LIMIT_HOOKS)[number];

/**
 * Everything `createLimiter` and identity take (limit, windowMs, limits, store, prefix, failMode,
 * apiKeyHeaders, ...) plus `cost`, `key`, `group`, `headers`, `retryAfterJitterMs`, `shadow`,
 * `handler` and the hooks `onLimited` and `onDecision`; functions get the Fastify `request`.
 * See docs/adapters.md for every option and its default.
 */
export interface RateLimitOptions extends HttpRateLimitOptions<FastifyRequest> {
  /**
   * The lifecycle hook the limiter runs in. 'onRequest' rejects before the body is read, the
   * cheapest; choose a later one, e.g. 'preHandler', when `key` needs authentication to have run
   * (its hooks must then be registered before this plugin, or on the route). Default 'onRequest'.
   */
  hook?: RateLimitHook;
}

/** A route's `config.rateLimit`: overrides merged over the plugin's options, or false for no limit. */
export type RouteRateLimitConfig = RateLimitOptions | false;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Floodgate's per-route options, merged over the plugin's once at registration; false: not limited. */
    rateLimit?: RouteRateLimitConfig;
  }
  interface FastifyInstance {
    /** The health snapshot of the plugin's limiters (every route's), for a `/healthz` route (docs/operations.md). */
    rateLimitHealth(options?: HealthOptions): Health;
    /** Runtime overrides of the plugin's limiter (override, clearOverride, listOverrides; needs `overrides: true`; docs/runtime-limits.md#overrides). */
    rateLimitOverrides: OverrideFace;
    /**
     * A handler for a `GET /usage`-style route: answers the caller's own usage of `routes` ('POST
     * /v1/chat', as declared; default: the plugin's group) as JSON, each route read with its own
     * `config.rateLimit`, keyed on the identity the limiter resolves (docs/quotas.md#usage-route).
     */
    rateLimitUsage(routes?: string[]): (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
  }
  interface FastifyRequest {
    /** Floodgate's decision for this request; unset when no limiter ran (or for a 401 unknown API key). */
    rateLimit?: Decision;
    /** With the `settle` option: this request's reservation; `request.floodgate.settle(actual)` charges the actual cost (docs/quotas.md). */
    floodgate?: Reservation;
  }
}

export type { Decision, Health, HealthOptions, RateLimitEvent, Reservation, SettleResult } from '@floodgate/core';

type Hook = (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => void;

function hookName(option: string, value: unknown): RateLimitHook {
  if (value === undefined) return 'onRequest';
  if (!RATE_LIMIT_HOOKS.includes(value as RateLimitHook)) invalidOption(option, value, `one of ${RATE_LIMIT_HOOKS.join(', ')}`);
  return value as RateLimitHook;
}

/**
 * How the instance's `trustProxy` makes request.ip, read once: true trusts every hop. Fastify keeps
 * its options under a symbol only ('fastify.options'); a version without it is not checked.
 */
function trustOf(fastify: FastifyInstance): RequestFacts['trustProxy'] {
  const key = Object.getOwnPropertySymbols(fastify).find((s) => s.description === 'fastify.options');
  const options = key ? (fastify as unknown as Record<symbol, { trustProxy?: unknown } | undefined>)[key] : undefined;
  if (!options) return undefined;
  const setting = options.trustProxy;
  return trustProxyOf(setting);
}

/** The hook for one route: the pattern is fixed at registration, never looked up per request. */
function limitHook(http: HttpLimiter<FastifyRequest>, pattern: string | undefined, trustProxy: RequestFacts['trustProxy'], allMethods = false): Hook {
  // Callback style: a decision that needed no waiting (a blocked caller's 429) is sent at once.
  return function floodgate(request, reply, done) {
    // A shaped route holds requests: one that goes away gives its slot back.
    const signal = http.options.shape && signalOnClose(reply.raw);
    const facts: RequestFacts = { ip: request.ip, headers: request.headers, method: request.method, route: pattern, allMethods, trustProxy, signal };
    const result = http.handleNow(facts, request);
    if (isThenable(result)) result.then((r) => apply(r, request, reply, done), done);
    else apply(result, request, reply, done);
  };
}

function apply(result: HttpResult, request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void): void {
  if (result.direct) return writeDirect(result, request, reply);
  try {
    request.rateLimit = result.decision;
    if (result.reservation) request.floodgate = result.reservation;
    const headers = result.headers;
    // Lower-cased here, once per name: Fastify lower-cases every name it is given, and a name that
    // comes out as a fresh string must be looked up in V8's string table to key its headers object.
    const own = headersOf(reply);
    if (own) for (let i = 0; i < headers.length; i++) own[lowerCaseAt(headers[i][0], i)] = headers[i][1];
    else for (let i = 0; i < headers.length; i++) reply.header(lowerCaseAt(headers[i][0], i), headers[i][1]);
  } catch (error) {
    return done(error as Error);
  }
  if (result.status === 'next') {
    finishOnResponse(reply.raw, result); // countOnly: the outcome decides whether the request counts
    return done();
  }
  reply.code(result.status);
  if (result.contentType) reply.type(result.contentType);
  reply.send(result.body); // replying from a callback-style hook: the chain stops, done is not called
}

/**
 * Floodgate's own problem+json, straight to Node: Fastify's onSend hooks and serialisation are
 * skipped (its onResponse hooks and logging still run). Headers other hooks already set on the reply
 * (e.g. CORS) go out too, unless Floodgate sets the same name.
 */
function writeDirect(result: HttpResult, request: FastifyRequest, reply: FastifyReply): void {
  request.rateLimit = result.decision;
  // Lower-case names, as Fastify sends its own (reply.header) on every other response: one case per framework.
  const direct = result.direct as string[];
  const head: string[] = new Array(direct.length);
  for (let i = 0; i < direct.length; i += 2) {
    head[i] = lowerCaseAt(direct[i], DIRECT_PLACES + (i >> 1)); // places of their own: a 429's list is not an admission's
    head[i + 1] = direct[i + 1];
  }
  // Nothing set on the reply (the common 429): no merged copy to read. Headers set on Node's response
  // (reply.raw.setHeader) need none either: writeHead merges them, Floodgate's names winning.
  const set = headersOf(reply);
  if (set === undefined || !isEmpty(set)) appendEarlier(head, reply.getHeaders());
  reply.hijack();
  reply.raw.writeHead(result.status as number, head);
  reply.raw.end(result.body as string);
}

/** Headers set on the reply before the 429, appended after Floodgate's own (which win a name both set). */
function appendEarlier(head: string[], earlier: ReturnType<FastifyReply['getHeaders']>): void {
  const names = Object.keys(earlier);
  if (names.length === 0) return;
  const mine = new Set<string>();
  for (let i = 0; i < head.length; i += 2) mine.add(head[i]);
  for (const name of names) {
    const value = earlier[name];
    if (value === undefined || mine.has(name.toLowerCase())) continue;
    if (Array.isArray(value)) for (const v of value) head.push(name, String(v));
    else head.push(name, String(value));
  }
}

function addHook(route: RouteOptions, name: RateLimitHook, hook: Hook): void {
  const existing = route[name] as unknown;
  const list = existing === undefined ? [] : Array.isArray(existing) ? existing : [existing];
  (route as unknown as Record<string, unknown>)[name] = [...list, hook];
}

/** Set on the config of each route the plugin saw declared (only when routes were declared before it loaded). */
const SEEN = Symbol('floodgate.fastify.seen');

const plugin: FastifyPluginAsync<RateLimitOptions> = async (fastify, options) => {
  const { hook, ...global } = options ?? {};
  const defaultHook = hookName('hook', hook);
  const http = createHttpLimiter<FastifyRequest>(global, { label: 'the plugin options' });
  const trustProxy = trustOf(fastify);
  // Routes declared before this plugin loaded (after an un-awaited `app.register(rateLimit)`) got no
  // hook: their requests pass unlimited. Only then is each route's first request looked at.
  const early = fastify.printRoutes().trim() !== '(empty tree)';
  // Declared up front so every request object keeps one shape (Fastify's advice for request properties).
  if (!fastify.hasRequestDecorator('rateLimit')) fastify.decorateRequest('rateLimit', undefined);
  // The first registration's limiters answer; a second registration keeps the first's health.
  if (!fastify.hasRequestDecorator('floodgate')) fastify.decorateRequest('floodgate', undefined);
  if (!fastify.hasDecorator('rateLimitHealth')) fastify.decorate('rateLimitHealth', (options?: HealthOptions) => http.health(options));
  if (!fastify.hasDecorator('rateLimitOverrides')) fastify.decorate('rateLimitOverrides', overrideFace(http));
  if (!fastify.hasDecorator('rateLimitUsage')) {
    fastify.decorate('rateLimitUsage', (routes?: string[]) => {
      const usage = http.usageRoute(routes);
      return async (request: FastifyRequest, reply: FastifyReply) => {
        const a = await usage({ ip: request.ip, headers: request.headers, method: request.method, route: undefined, trustProxy }, request);
        await reply.code(a.status).type(a.contentType).send(a.body);
      };
    });
  }

  fastify.addHook('onRoute', (route) => {
    const config = route.config?.rateLimit;
    // Marks the route as seen; Fastify copies the config (symbols too) into the route's context.
    if (early) route.config = { ...route.config, [SEEN]: true } as typeof route.config;
    if (config === false) return;
    if (config !== undefined && (config === null || typeof config !== 'object')) {
      invalidOption(`${route.url} config.rateLimit`, config, 'an options object, or false for no limit');
    }
    const { hook: routeHook, ...overrides } = config ?? {};
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    // `all()` registers every method the instance supports: one bucket for them all, not one per method.
    const upper = methods.map((m) => m.toUpperCase());
    const allMethods = fastify.supportedMethods.every((m) => upper.includes(m));
    const label = `${allMethods ? 'ALL' : methods.join(',')} ${route.url}`;
    const limiter = http.route(config ? overrides : undefined, label)!;
    // Every route is known here: a bucket defined twice fails at registration, naming both routes.
    for (const method of methods) limiter.claim(limiter.scopeOf({ method, route: route.url, allMethods }));
    addHook(route, hookName(`${route.url} config.rateLimit.hook`, routeHook ?? defaultHook), limitHook(limiter, route.url, trustProxy, allMethods));
  });

  // Requests that match no route never pass a route's hooks: limit them in one '<unmatched>'
  // bucket per caller, so scanning for URLs costs quota without minting buckets.
  // Callback style: routes that matched (nearly every request) pass without a promise.
  // On a matched route the hook is needed once at most (the warning): its first request takes it out
  // of that route's hooks, so a limited route runs one Floodgate hook (src/one-hook.ts).
  const notFound = limitHook(http, undefined, trustProxy);
  const single = oneHook<FastifyRequest, FastifyReply>(defaultHook, (request, reply, done) => {
    if (request.is404) return notFound(request, reply, done);
    if (unseenOpen) checkSeen(request);
    single.detach(request);
    done();
  });
  fastify.addHook(defaultHook, single.hook);
  let unseenOpen = early;
  function checkSeen(request: FastifyRequest): void {
    const { config, method, url } = request.routeOptions;
    if (!config || SEEN in config) return;
    unseenOpen = false;
    warnRouteNotLimited(
      http,
      `${method} ${url}`,
      'it was declared before the @floodgate/fastify plugin loaded, so the plugin never saw it. Await the registration before declaring routes: await app.register(rateLimit, options) (docs/adapters.md#fastify-register-before-routes)',
    );
  }
};

/** The plugin: `await app.register(rateLimit, options)`; per route, `config: { rateLimit: {...} | false }`. */
export const rateLimit = fp(plugin, { fastify: '5.x', name: '@floodgate/fastify' });
// eslint-disable-next-line no-restricted-syntax -- the default export Fastify's register() expects (STYLE.md's one exception)
export default rateLimit;
