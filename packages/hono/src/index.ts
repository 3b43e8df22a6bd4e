// @floodgate/hono: rateLimit(options) as Hono middleware on Web-standard Request/Response, for the app or one route. The core decides.
import {
  createHttpLimiter,
  isThenable,
  type Decision,
  type Health,
  type HealthOptions,
  type HttpLimiter,
  type HttpRateLimitOptions,
  type HttpResult,
  type RequestFacts,
  type Reservation,
  stepAside,
  overrideFace,
  type OverrideFace,
} from '@floodgate/core/http';
import type { Context, MiddlewareHandler, Next } from 'hono';
import { CLIENT_IP_OPTIONS, clientIpReader, trustOf, type ClientIpOptions } from './client-ip';
import { FLOODGATE, locate, type Mark } from './route-pattern';

/** What the middleware puts on the context: `c.get('rateLimit')`, typed through Hono's Variables. */
export interface RateLimitVariables {
  /** Floodgate's decision for this request; undefined when no limiter ran (or for a 401 unknown API key). */
  rateLimit: Decision | undefined;
  /** With the `settle` option: this request's reservation; `c.get('floodgate')?.settle(actual)` charges the actual cost (docs/quotas.md). */
  floodgate: Reservation | undefined;
}

declare module 'hono' {
  interface ContextVariableMap extends RateLimitVariables {}
}

/**
 * Everything `createLimiter` and identity take (limit, windowMs, limits, store, prefix, failMode,
 * apiKeyHeaders, ...) plus `cost`, `key`, `group`, `headers`, `retryAfterJitterMs`, `shadow`,
 * `handler` and the hooks `onLimited` and `onDecision`, whose functions get the Hono context `c`;
 * and where the client IP comes from (`getConnInfo`, `trustProxy`). See docs/adapters.md.
 */
export type RateLimitOptions = HttpRateLimitOptions<Context> & ClientIpOptions;
export type { Decision, Health, HealthOptions, RateLimitEvent, Reservation, SettleResult } from '@floodgate/core';
export type { ClientIpOptions } from './client-ip';

/** Hono middleware that also makes route-level middlewares from its own options. */
export interface RateLimitMiddleware extends MiddlewareHandler<{ Variables: RateLimitVariables }>, OverrideFace {
  /**
   * A middleware for one route: `overrides` merged over this one's options, on the same store.
   * `false` exempts the route from an app-level limiter: `app.get('/health', limiter.route(false), h)`.
   */
  route(overrides: RateLimitOptions | false): RateLimitMiddleware;
  /** The health snapshot of this limiter and every route made from it, for a `/healthz` route (docs/operations.md). */
  health(options?: HealthOptions): Health;
  /**
   * A handler for a `GET /usage`-style route: answers the caller's own usage of `routes` ('POST
   * /v1/chat', as Hono matches them; default: this limiter's group) as JSON, keyed on the identity
   * this limiter resolves (docs/quotas.md#usage-route).
   */
  usageRoute(routes?: string[]): (c: Context) => Promise<Response>;
}

/** The options the core parses, and the client-IP ones this package reads itself. */
function split(options: RateLimitOptions): { core: HttpRateLimitOptions<Context>; ip: ClientIpOptions } {
  // Not an object: the core names the mistake.
  if (!options || typeof options !== 'object' || Array.isArray(options)) return { core: options, ip: {} };
  const core: Record<string, unknown> = { ...options };
  const ip: Record<string, unknown> = {};
  for (const name of CLIENT_IP_OPTIONS) {
    if (name in core) ip[name] = core[name];
    delete core[name];
  }
  return { core: core as HttpRateLimitOptions<Context>, ip };
}

/**
 * Header names Node does not join with ', ' in IncomingMessage.headers (it keeps the first of
 * several, or joins cookies with '; ', or makes set-cookie an array), where the Fetch Headers of the
 * Web request join every value: those are read through the Web request. Every other name reads the
 * same value from either (Node's parser has trimmed the whitespace Fetch would).
 */
const NODE_OWN_JOIN = new Set(['age', 'authorization', 'content-length', 'content-type', 'etag', 'expires', 'from', 'host', 'if-modified-since', 'if-unmodified-since', 'last-modified', 'location', 'max-forwards', 'proxy-authorization', 'referer', 'retry-after', 'server', 'user-agent', 'cookie', 'set-cookie']);

/** Node's parsed request headers under @hono/node-server (`c.env.incoming`); undefined on every other runtime. */
function nodeIncomingHeaders(c: Context): Record<string, string | string[] | undefined> | undefined {
  const env: unknown = c.env;
  if (env === null || typeof env !== 'object') return undefined;
  const headers = (env as { incoming?: { headers?: unknown } }).incoming?.headers;
  return headers !== null && typeof headers === 'object' ? (headers as Record<string, string | string[] | undefined>) : undefined;
}

/**
 * One request header by its lower-case name: from Node's parsed headers where they hold what the
 * Web request's Headers.get would answer (a joined name), skipping its name check and lower-casing
 * per call; else through the Web request.
 */
function headerOf(c: Context, node: Record<string, string | string[] | undefined> | undefined, name: string): string | undefined {
  if (node !== undefined && !NODE_OWN_JOIN.has(name)) {
    const value = node[name];
    if (value === undefined || typeof value === 'string') return value;
  }
  return c.req.raw.headers.get(name) ?? undefined;
}

const RAW = Symbol('floodgate.hono.headers');
/**
 * The headers only a proxy should write, read from the Web request when the core asks for them:
 * its FG_PROXY_HEADER_UNTRUSTED check reads them while no proxy is trusted, until it has warned
 * once, and nothing reads them after. Until then (on a server no proxy header ever reaches: always)
 * that is three Headers lookups a request, not a copy of every header.
 */
const PROXY_HEADER_VIEW: object = Object.create(
  null,
  Object.fromEntries(
    ['x-forwarded-for', 'forwarded', 'x-real-ip'].map((name) => [name, { get(this: { [RAW]: Context }) { return headerOf(this[RAW], nodeIncomingHeaders(this[RAW]), name); } }]),
  ),
);

/** The headers the core reads (the API-key headers, lower case, and with `proxyHeaders` the proxy ones), from the request: not a copy of every header. */
function headersOf(c: Context, names: readonly string[], proxyHeaders: boolean): Record<string, string | undefined> {
  const node = nodeIncomingHeaders(c);
  const out: Record<string | symbol, unknown> = proxyHeaders ? Object.create(PROXY_HEADER_VIEW) : {};
  if (proxyHeaders) out[RAW] = c;
  for (let i = 0; i < names.length; i++) out[names[i]] = headerOf(c, node, names[i]);
  return out as Record<string, string | undefined>;
}

/** The part of Node's ServerResponse this adapter writes headers on. */
interface NodeOutgoing {
  setHeader(name: string, value: string): unknown;
  readonly headersSent: boolean;
}

/**
 * The Node response under @hono/node-server (`c.env.outgoing`), while its headers are unsent; else
 * undefined (Bun, Deno, Workers, `app.request()` in a test). Floodgate's headers go there rather
 * than through c.header: one c.header makes Hono build a Headers object for the response and every
 * c.text / c.json after it leave @hono/node-server's fast path (a plain record written by one
 * writeHead), which cost an admitted request more than the limiter's decision. Node merges them
 * into whatever response the app sends, a Response a handler built itself included.
 */
function nodeOutgoing(c: Context): NodeOutgoing | undefined {
  const env: unknown = c.env;
  if (env === null || typeof env !== 'object') return undefined;
  const outgoing = (env as { outgoing?: Partial<NodeOutgoing> }).outgoing;
  return outgoing && typeof outgoing.setHeader === 'function' && outgoing.headersSent === false ? (outgoing as NodeOutgoing) : undefined;
}

/** Floodgate's headers on the Node response when there is one (true), else through c.header (false). */
function setHeaders(c: Context, headers: HttpResult['headers']): boolean {
  const outgoing = nodeOutgoing(c);
  if (outgoing) {
    for (let i = 0; i < headers.length; i++) outgoing.setHeader(headers[i][0], headers[i][1]);
    return true;
  }
  for (let i = 0; i < headers.length; i++) c.header(headers[i][0], headers[i][1]);
  return false;
}

/**
 * Floodgate's answer as a Web Response through Hono's context, so headers set before the limiter
 * (c.header) are kept. Ours go on the Node response (nodeOutgoing), else through c.header, not as a
 * record to c.body: Hono turns a record of more than one header into a Headers object header by
 * header anyway, and building the record first (and a copy with Content-Type) cost a 429 more than
 * the rest of this adapter's work.
 */
function answer(c: Context, result: HttpResult): Response {
  const status = result.status as 401 | 429 | 503;
  const headers = result.headers;
  const body = result.body;
  // A custom handler's body: a Response it built keeps its own headers (ours over them) and gets our status.
  if (!result.contentType && body instanceof Response) {
    const res = new Response(body.body, { status, headers: body.headers });
    for (let i = 0; i < headers.length; i++) res.headers.set(headers[i][0], headers[i][1]);
    return res;
  }
  const onNode = setHeaders(c, headers);
  if (result.contentType) {
    // On Node the type rides with the body as Hono's one-header record (its fast path), which
    // @hono/node-server writes over the Node response's own headers: there it would be text/plain.
    if (onNode) return c.body(body as string, status, { 'Content-Type': result.contentType });
    c.header('Content-Type', result.contentType);
    return c.body(body as string, status);
  }
  if (typeof body === 'string') return c.text(body, status);
  return body === undefined ? c.body(null, status) : c.json(body, status);
}

/** Applies one result: the decision on the context, headers, then the request goes on or is answered here. */
function finish(c: Context, result: HttpResult, next: Next): Response | Promise<void> {
  c.set('rateLimit', result.decision);
  if (result.reservation) c.set('floodgate', result.reservation);
  if (result.status !== 'next') return answer(c, result);
  const headers = result.headers;
  // On the Node response they survive whatever Response the handler returns: nothing to check after it.
  const kept = headers.length === 0 || setHeaders(c, headers);
  const finish = result.finish;
  if (!finish) return kept ? next() : next().then(() => keepHeaders(c, headers));
  // A client that goes away mid-handler finishes at once (an in-flight slot is freed then, not when
  // the handler ends); finish runs once, so the handler's end changes nothing after.
  const signal = c.req.raw.signal;
  if (signal?.aborted) finish(undefined);
  else signal?.addEventListener('abort', () => finish(undefined), { once: true });
  return next().then(
    () => {
      if (!kept) keepHeaders(c, headers);
      // countOnly: the returned response's status decides, or a client that went away (a failure).
      finish(c.req.raw.signal?.aborted ? undefined : c.res.status);
    },
    (error: unknown) => {
      finish(undefined);
      throw error;
    },
  );
}

/** A handler that returned a Response it built itself (not through c.json, c.text, ...) dropped the headers set through c.header before it (never none): set them again. */
function keepHeaders(c: Context, headers: HttpResult['headers']): void {
  if (c.res.headers.has(headers[0][0])) return;
  for (let i = 0; i < headers.length; i++) c.header(headers[i][0], headers[i][1]);
}

function middleware(http: HttpLimiter<Context> | null, ipOf: (c: Context) => string | undefined, ipOptions: ClientIpOptions, health: (options?: HealthOptions) => Health, root: object): RateLimitMiddleware {
  const apiKeyHeaders = http ? http.options.identity.headers : [];
  // Hono's trust-proxy setting is this package's own option: as the frameworks' settings are read for the others.
  const trustProxy = trustOf(ipOptions);
  // Not an async function: a decision that needed no waiting (the memory store, a blocked caller)
  // goes on to next() in the same turn, with no promise of its own.
  const mw = function floodgate(c: Context, next: Next): Response | Promise<Response | void> {
    if (!http) return next();
    try {
      const { route, allMethods, deferred, own } = locate(c);
      if (deferred) {
        // The route's own limiter decides it (stepAside warns when another top-level rateLimit() made it).
        if (own) stepAside(http, root, [{ root: own.mark.root, http: own.mark.http as HttpLimiter<Context> | null }], own.route);
        return next();
      }
      // A shaped route holds requests: the Request's own signal (aborted when its client goes away) gives the slot back.
      const signal = http.options.shape ? c.req.raw.signal : undefined;
      const facts: RequestFacts = { ip: ipOf(c), headers: headersOf(c, apiKeyHeaders, trustProxy === 'none'), method: c.req.method, route, allMethods, trustProxy, signal };
      const pending = http.handleNow(facts, c);
      if (isThenable(pending)) return pending.then<Response | void>((result) => finish(c, result, next));
      return finish(c, pending, next);
    } catch (error) {
      return Promise.reject(error);
    }
  } as unknown as RateLimitMiddleware;
  const mark: Mark = { root, http };
  Object.defineProperty(mw, FLOODGATE, { value: mark });
  mw.route = (overrides) => {
    if (overrides === false || !http) return middleware(null, ipOf, ipOptions, health, root);
    const { core, ip } = split(overrides);
    const own = Object.keys(ip).length > 0 ? { ...ipOptions, ...ip } : ipOptions;
    return middleware(http.route(core), own === ipOptions ? ipOf : clientIpReader(own), own, health, root);
  };
  mw.health = health;
  Object.assign(mw, overrideFace(http));
  mw.usageRoute = (routes) => {
    if (!http) return (c) => Promise.resolve(c.body(null, 404));
    const usage = http.usageRoute(routes);
    return async (c) => {
      const a = await usage({ ip: ipOf(c), headers: headersOf(c, apiKeyHeaders, trustProxy === 'none'), method: c.req.method, route: undefined, trustProxy }, c);
      return c.body(a.body, a.status, { 'Content-Type': a.contentType });
    };
  };
  return mw;
}

/**
 * Rate limiting for Hono, on any runtime Hono runs on. On the app, `app.use(rateLimit(options))`
 * keys each request on the route it will reach (method + pattern, e.g. 'GET /users/:id'); on one
 * route, `app.post('/login', limiter.route({ limit: 5, failMode: 'closed' }), handler)`. A request
 * that matches no route is limited in one '<unmatched>' bucket per caller. Pass the runtime's
 * `getConnInfo` for the client IP.
 */
export function rateLimit(options: RateLimitOptions = {}): RateLimitMiddleware {
  const { core, ip } = split(options);
  const ipOf = clientIpReader(ip);
  const http = createHttpLimiter<Context>(core);
  return middleware(http, ipOf, ip, http.health, http);
}
