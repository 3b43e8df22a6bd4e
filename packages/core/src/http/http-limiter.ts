// The framework-free request pipeline the adapters share: facts in; decision, status, headers and body out.
import type { ServerResponse } from 'node:http';
import type { Decision } from '../decision';
import { formatHeaders, type HeaderPair } from '../headers/format-headers';
import { PROBLEM_CONTENT_TYPE, problemDetails } from '../headers/problem-details';
import { identifyFrom, type Identify, type Identity, type RequestFacts } from '../identity';
import { maxCostOf } from '../options';
import { limiterFrom, type EngineLimiter, type Limiter } from '../limiter';
import { healthOf, type Health, type HealthSource } from '../health';
import { metricsFor, type KeyLookupCounts } from '../metrics';
import { MemoryStore } from '../stores/memory-store';
import { requestCost } from '../validate';
import { NestedMemo } from '../memo';
import { callSite, claimBuckets } from './bucket-claims';
import { countedTwiceCheck } from './counted-twice';
import {
  IDENTITY_NAMES,
  LIMITER_NAMES,
  resolveHttpOptions,
  type HttpRateLimitOptions,
  type RateLimitEvent,
  type ResolvedHttpOptions,
} from './resolve-http-options';

/** The scope of requests that matched no route: one bucket per caller, so raw URLs never mint buckets. */
export const UNMATCHED_SCOPE = '<unmatched>';
/** Most method and route pairs whose scope one limiter keeps built. */
const SCOPES_MAX = 10_000;
/** Most plan limiters (API keys whose `resolveKey` answer carries `limits`) kept per route. */
const MAX_PLANS = 1000;

/** What an adapter does with one request. */
export interface HttpResult {
  /** Undefined for 401 (an unknown API key with `unknownKey: 'reject'`) and for an exempt request (`allowList`, `skip`). */
  readonly decision: Decision | undefined;
  /** 'next': serve it (headers still apply); 429: limited; 503: store failed with failMode 'closed'; 401: unknown API key. */
  readonly status: 'next' | 401 | 429 | 503;
  /** Set these on the response in every case, in this order. */
  readonly headers: readonly HeaderPair[];
  /** For 401, 429 and 503: the body to send; a string when it is the default problem+json. */
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
  readonly settle?: (status: number | undefined) => void;
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
  /** The bucket scope: the group, `METHOD /pattern` (HEAD counts as GET), or '<unmatched>' when no route matched. */
  scopeOf(facts: Pick<RequestFacts, 'method' | 'route'>): string;
  /**
   * Claims this scope's buckets on the store now (else at its first request): throws
   * FG_BUCKET_CONFLICT when another limiter counts them under another definition. Adapters that
   * know their routes at registration (Fastify) call it there.
   */
  claim(scope: string): void;
  /**
   * A snapshot for a health route, over this limiter and every route, group, plan and extra-key
   * limiter built from the same `rateLimit(...)`: per store the breaker state, last error and
   * counts. `healthy` is false while any store's breaker is not closed. See docs/operations.md.
   */
  health(): Health;
}

/** Every limiter and key cache built from one createHttpLimiter, for its health snapshot. */
interface Family {
  readonly sources: Set<HealthSource>;
  readonly keyLookups: Set<KeyLookupCounts>;
}

interface Shared {
  limiter: EngineLimiter;
  identify: Identify;
  family: Family;
}

/** Units a request drew from one subject, to give back when it should not count. */
interface Charge {
  readonly limiter: EngineLimiter;
  readonly subject: string;
  readonly scope: string;
  /** The store's clock when it charged (Decision.at): a refund undoes exactly that charge. */
  readonly at: number;
  /** The extra key's name; undefined for the request's own identity. */
  readonly name?: string;
}

/** What createHttpLimiter is told besides the options. */
export interface HttpLimiterContext {
  /** Names this limiter in errors (FG_BUCKET_CONFLICT); default: the caller's source location. */
  readonly label?: string;
}
/**
 * Hands `result.settle` the response's outcome (`countOnly`): its status once it has finished,
 * undefined when the connection closed before it did. Adapters call it with Node's response.
 */
export function settleOnFinish(res: ServerResponse, result: HttpResult): void {
  const settle = result.settle;
  if (!settle) return;
  res.once('finish', () => settle(res.statusCode));
  res.once('close', () => {
    if (!res.writableFinished) settle(undefined);
  });
}

/** A promise, or anything awaiting would treat as one. */
function isThenable(value: unknown): value is PromiseLike<unknown> {
  return value instanceof Promise || (value !== null && (typeof value === 'object' || typeof value === 'function') && typeof (value as { then?: unknown }).then === 'function');
}

/** A key function's answer that names a subject: a non-empty string or a finite number (else: fall back / skip). */
function isKeyValue(raw: unknown): raw is string | number {
  return (typeof raw === 'string' && raw !== '') || (typeof raw === 'number' && Number.isFinite(raw));
}

/** An exempt request (allow list, `skip`): served as if no limiter ran. */
const SKIPPED: HttpResult = Object.freeze({ decision: undefined, status: 'next', headers: [] });
const UNAUTHORIZED = JSON.stringify({ type: 'about:blank', title: 'Unauthorized', status: 401, detail: 'Unknown API key.' });
const UNAUTHORIZED_HEAD = ['Content-Type', PROBLEM_CONTENT_TYPE, 'Content-Length', String(Buffer.byteLength(UNAUTHORIZED))];

/** The flat header list of a response written directly: the rate-limit headers, then the body's type and length. */
function directHead(headers: readonly HeaderPair[], length: string): string[] {
  const head: string[] = [];
  for (const [name, value] of headers) head.push(name, value);
  head.push('Content-Type', PROBLEM_CONTENT_TYPE, 'Content-Length', length);
  return head;
}

/** Default bodies already rendered, by what they say: a flood of 429s renders each distinct body once. */
const BODIES_MAX = 1000;
const bodies = new Map<string, { body: string; length: string }>();

function problemBody(decision: Decision, cost: number, retryAfter: number | undefined): { body: string; length: string } {
  const render = () => {
    const body = JSON.stringify(problemDetails(decision, cost, retryAfter));
    return { body, length: String(Buffer.byteLength(body)) };
  };
  // "Can never be admitted" also names the cost and the limit: rare, rendered each time.
  if (decision.reason !== 'fail-closed' && decision.retryAfterMs < 0) return render();
  let key = `${decision.reason === 'fail-closed' ? 'c' : decision.reason === 'locked' ? 'l' : 'r'}${retryAfter ?? ''}`;
  if (decision.reason !== 'fail-closed') for (const l of decision.limits) if (!l.allowed) key += `\u0000${l.policy}`;
  let hit = bodies.get(key);
  if (hit === undefined) {
    if (bodies.size >= BODIES_MAX) bodies.clear();
    bodies.set(key, (hit = render()));
  }
  return hit;
}

/**
 * Builds the pipeline once from the global options. The default MemoryStore is made here, once, so
 * that routes and groups resolved later share it.
 */
export function createHttpLimiter<Req = unknown>(options: HttpRateLimitOptions<Req> = {}, context: HttpLimiterContext = {}): HttpLimiter<Req> {
  const resolved = resolveHttpOptions(options);
  // Only when no store was given; the store is set after parsing so that errors name what the app wrote.
  const global = options.store === undefined ? { ...options, store: resolved.limiter.store } : options;
  const label = context.label ?? `rateLimit() at ${callSite() ?? 'an unknown place'}`;
  const family: Family = { sources: new Set(), keyLookups: new Set() };
  return build(global, resolved, { limiter: join(family, limiterFrom(resolved.limiter)), identify: identityIn(family, resolved), family }, label);
}

/** A limiter counted in its family's health snapshot. */
function join(family: Family, limiter: EngineLimiter): EngineLimiter {
  family.sources.add(limiter.healthSource);
  return limiter;
}

/** The identify function for these options; its key cache's counts go to the metrics and the family's health. */
function identityIn<Req>(family: Family, o: ResolvedHttpOptions<Req>): Identify {
  return identifyFrom(o.identity, (stats) => {
    family.keyLookups.add(stats);
    metricsFor(o.limiter.meterProvider).keyLookups.add(stats);
  });
}

function build<Req>(global: HttpRateLimitOptions<Req>, o: ResolvedHttpOptions<Req>, shared: Shared, label: string): HttpLimiter<Req> {
  const { limiter, identify, family } = shared;
  const plans = new Map<string, EngineLimiter>();
  const { store, prefix, limits } = o.limiter;
  // A group's bucket is known now: claim it at registration. A route's scope is known at its first request.
  if (o.group !== undefined) claimBuckets(store, prefix, o.group, limits, label);
  const claimed = new Set<string>();
  // Decided once: a request needs charges tracked only for extra keys or counting by outcome.
  const plain = o.extraKeys.length === 0 && !o.countOnly;
  const extras = o.extraKeys.map((k) => ({ ...k, limits: k.limiter.limits, limiter: join(family, limiterFrom(k.limiter)), claimed: new Set<string>() }));

  // Whether identify can look a key up (resolveKey): only then does it take the block-cache hook.
  const lookups = o.identity.resolveKey !== undefined;
  const withRetryAfter = { retryAfter: true, retryAfterJitterMs: o.retryAfterJitterMs };
  const withoutRetryAfter = { retryAfter: false, retryAfterJitterMs: o.retryAfterJitterMs };
  // Scopes by method and route pattern, built once each (patterns come from the app's routes, not
  // from URLs; bounded all the same).
  const scopes = new NestedMemo<string>(SCOPES_MAX);
  function scopeOf(facts: Pick<RequestFacts, 'method' | 'route'>): string {
    if (o.group !== undefined) return o.group;
    const route = facts.route;
    if (route === undefined) return UNMATCHED_SCOPE;
    const hit = scopes.get(facts.method, route);
    if (hit !== undefined) return hit;
    const method = facts.method.toUpperCase();
    // HEAD is GET without a body: one bucket, or HEAD would double a caller's GET quota.
    const scope = `${method === 'HEAD' ? 'GET' : method} ${route}`;
    scopes.set(facts.method, route, scope);
    return scope;
  }

  /**
   * The built-in identity (API key, else IP). Cheapest first: a caller the block cache denies is
   * answered without a resolveKey lookup; without resolveKey there is no lookup to skip, and no hook is built.
   */
  function builtInIdentity(facts: RequestFacts, cost: number, scope: string): Identity | Promise<Identity> {
    return lookups ? identify(facts, { isBlocked: (id) => limiterFor(id).isBlocked(id.subject, { cost, scope }) }) : identify(facts);
  }

  /** Synchronous unless a `key` function or a `resolveKey` lookup makes it wait: no await when nothing waits. */
  function identityOf(facts: RequestFacts, request: Req, cost: number, scope: string): Identity | Promise<Identity> {
    if (!o.key) return builtInIdentity(facts, cost, scope);
    const fromKey = (raw: unknown): Identity | Promise<Identity> =>
      isKeyValue(raw) ? { subject: `custom:${raw}`, kind: 'custom' as const } : builtInIdentity(facts, cost, scope);
    const raw = o.key(request);
    // A key function that answers at once is used at once; only a promise (or thenable) is waited for.
    return isThenable(raw) ? Promise.resolve(raw).then(fromKey) : fromKey(raw);
  }

  /** The key's own plan (from resolveKey) replaces the route's limits; one limiter per plan, on the same store. */
  function limiterFor(identity: Identity): EngineLimiter {
    if (!identity.resolvedLimits || !identity.plan) return limiter;
    let planned = plans.get(identity.plan);
    if (!planned) {
      // The plan was validated when resolveKey answered; the route's other options apply to it.
      planned = limiterFrom({ ...o.limiter, limits: identity.resolvedLimits, maxCost: maxCostOf(identity.resolvedLimits) });
      if (plans.size >= MAX_PLANS) {
        const oldest = plans.keys().next().value as string;
        family.sources.delete(plans.get(oldest)!.healthSource);
        plans.delete(oldest);
      }
      join(family, planned);
      plans.set(identity.plan, planned);
    }
    return planned;
  }

  /**
   * Decides one request; synchronous when nothing has to wait (no cost or key function promise, no
   * resolveKey lookup, a caller answered from the block cache), so a flood of 429s never waits a
   * turn of the event loop. A synchronous throw becomes a rejected promise.
   */
  function handleNow(facts: RequestFacts, request: Req): HttpResult | Promise<HttpResult> {
    try {
      if (o.allowList?.(facts.ip)) return SKIPPED;
      if (o.skip) {
        const skip = o.skip(request);
        if (skip instanceof Promise) return skip.then((yes) => (yes === true ? SKIPPED : counted(facts, request)));
        if (skip === true) return SKIPPED;
      }
      return counted(facts, request);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** A request that is not exempt: its cost, then its identity, then its decision. */
  function counted(facts: RequestFacts, request: Req): HttpResult | Promise<HttpResult> {
    try {
      if (typeof o.cost !== 'function') return withCost(facts, request, o.cost);
      const cost = o.cost(request);
      if (isThenable(cost)) return Promise.resolve(cost).then((c) => withCost(facts, request, requestCost(c, 'the cost function returned')));
      return withCost(facts, request, requestCost(cost, 'the cost function returned'));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Claims a scope's buckets for these limits and remembers it, so each scope is claimed once. */
  function claimInto(done: Set<string>, scope: string, scopeLimits: typeof limits): void {
    claimBuckets(store, prefix, scope, scopeLimits, label);
    done.add(scope);
  }
  const claim = (scope: string) => claimInto(claimed, scope, limits);
  const countedTwice = countedTwiceCheck(label, o.shadow, o.limiter.failure.logger, o.limiter.warnings);

  function withCost(facts: RequestFacts, request: Req, cost: number): HttpResult | Promise<HttpResult> {
    const scope = scopeOf(facts);
    if (!claimed.has(scope)) claim(scope);
    countedTwice?.(request, scope);
    const pending = identityOf(facts, request, cost, scope);
    return pending instanceof Promise
      ? pending.then((identity) => withIdentity(identity, request, cost, scope))
      : withIdentity(pending, request, cost, scope);
  }

  function withIdentity(identity: Identity, request: Req, cost: number, scope: string): HttpResult | Promise<HttpResult> {
    const chosen = limiterFor(identity);
    const options = { cost, scope };
    if (identity.rejected) {
      // An unknown key is answered 401, but counted against its client IP: past the IP's limit the
      // answer is that IP's 429, so guessing keys is limited like any other request.
      return chosen.consume(identity.subject, options).then((decision) => {
        if (!decision.allowed && !decision.degraded) return respond(decision, request, cost, scope, identity);
        const direct = o.respondDirectly ? UNAUTHORIZED_HEAD : undefined;
        return { decision: undefined, status: 401 as const, headers: [], body: UNAUTHORIZED, contentType: PROBLEM_CONTENT_TYPE, direct };
      });
    }
    // A caller the block cache denies is answered synchronously: the flood of 429s skips the store's promise chain.
    const blocked = chosen.blocked(identity.subject, options);
    if (blocked) return respond(blocked, request, cost, scope, identity);
    if (plain) {
      // Synchronous on a store that never waits (MemoryStore): served in the same turn, no promise.
      const decision = chosen.consumeNow(identity.subject, options);
      if (decision instanceof Promise) return decision.then((d) => respond(d, request, cost, scope, identity));
      return respond(decision, request, cost, scope, identity);
    }
    return chosen.consume(identity.subject, options).then((decision) => {
      const charges: Charge[] = [];
      if (decision.at !== undefined) charges.push({ limiter: chosen, subject: identity.subject, scope, at: decision.at });
      if (!decision.allowed) return respond(decision, request, cost, scope, identity);
      return withExtraKeys(decision, charges, request, cost, scope, identity);
    });
  }

  /**
   * The extra keys, one after another, each only once the ones before admitted: all admit, or the
   * ones charged are refunded and the denial answers. Sequential on purpose: a parallel check
   * would charge keys a denial then has to give back, and other requests would see those units.
   */
  async function withExtraKeys(main: Decision, charges: Charge[], request: Req, cost: number, scope: string, identity: Identity): Promise<HttpResult> {
    try {
      for (const extra of extras) {
        const raw = await extra.key(request);
        if (!isKeyValue(raw)) continue;
        const subject = `${extra.name}:${raw}`;
        const extraScope = `${scope}#${extra.name}`;
        if (!extra.claimed.has(extraScope)) claimInto(extra.claimed, extraScope, extra.limits);
        const decision = await extra.limiter.consume(subject, { cost, scope: extraScope });
        if (decision.at !== undefined) charges.push({ limiter: extra.limiter, subject, scope: extraScope, at: decision.at, name: extra.name });
        if (!decision.allowed) {
          refundAll(charges, cost);
          return respond(decision, request, cost, scope, identity);
        }
      }
    } catch (error) {
      refundAll(charges, cost); // a failing key function must not leave units charged
      throw error;
    }
    const result = (await respond(main, request, cost, scope, identity)) as HttpResult;
    return o.countOnly && charges.length > 0 ? { ...result, settle: settler(charges, request, cost) } : result;
  }

  /** Gives every charge of a request back (best effort: a store failure keeps the unit charged, the safe side). */
  function refundAll(charges: readonly Charge[], cost: number): void {
    for (const c of charges) void c.limiter.refund(c.subject, { cost, scope: c.scope, at: c.at });
  }

  /** `countOnly`: once the response is known, gives the units back when it should not count; `resetOnSuccess` clears keys. */
  function settler(charges: readonly Charge[], request: Req, cost: number): (status: number | undefined) => void {
    let settled = false;
    return (status) => {
      if (settled) return;
      settled = true;
      let failed = true;
      try {
        failed = o.isFailure({ status, request }) === true;
      } catch {
        // A throwing isFailure counts the request: the safe side for a login.
      }
      if (failed !== (o.countOnly === 'failed')) refundAll(charges, cost);
      if (failed || o.resetOnSuccess.size === 0) return;
      for (const c of charges) {
        if (c.name !== undefined && o.resetOnSuccess.has(c.name)) c.limiter.reset(c.subject, { scope: c.scope }).catch(() => undefined);
      }
    };
  }

  function respond(decision: Decision, request: Req, cost: number, scope: string, identity: Identity): HttpResult | Promise<HttpResult> {
    // The hooks' event, built only when a hook (or the handler) will read it.
    let event: RateLimitEvent<Req> | undefined;
    if (o.onDecision || (!decision.allowed && (o.onLimited || o.handler))) {
      event = { request, decision, scope, cost, identity: identity.kind, shadow: o.shadow };
      o.onDecision?.(event);
      if (!decision.allowed) o.onLimited?.(event);
    }

    const enforce = !decision.allowed && !o.shadow;
    const headers = formatHeaders(decision, o.dialects, enforce ? withRetryAfter : withoutRetryAfter);
    if (!enforce) return { decision, status: 'next', headers };
    const status = decision.reason === 'fail-closed' ? 503 : 429;
    if (status === 429 && o.handler) {
      const handler = o.handler;
      return Promise.resolve(handler(request, event!)).then((body) => ({ decision, status, headers, body }));
    }
    const retryAfter = headers.find(([name]) => name === 'Retry-After');
    const { body, length } = problemBody(decision, cost, retryAfter ? Number(retryAfter[1]) : undefined);
    return { decision, status, headers, body, contentType: PROBLEM_CONTENT_TYPE, direct: o.respondDirectly ? directHead(headers, length) : undefined };
  }

  async function handle(facts: RequestFacts, request: Req): Promise<HttpResult> {
    return handleNow(facts, request);
  }

  function route(overrides: HttpRateLimitOptions<Req> | false | undefined, routeLabel?: string): HttpLimiter<Req> | null {
    if (overrides === false) return null;
    if (overrides === undefined) return api;
    const where = routeLabel ?? `route() at ${callSite() ?? 'an unknown place'}`;
    const resolved = resolveHttpOptions(global, overrides, routeLabel ? `${routeLabel} config.rateLimit` : 'rateLimit');
    // A route keeps the global limiter (and its block cache) unless it overrides a limiter option,
    // and the global identity (one key cache, one lookup per key) unless it overrides an identity option.
    const overridden = (names: ReadonlySet<string>) => Object.entries(overrides).some(([k, v]) => v !== undefined && names.has(k));
    return build(
      global,
      resolved,
      {
        limiter: overridden(LIMITER_NAMES) ? join(family, limiterFrom(resolved.limiter)) : limiter,
        identify: overridden(IDENTITY_NAMES) ? identityIn(family, resolved) : identify,
        family,
      },
      where,
    );
  }

  const health = () => healthOf(family.sources, family.keyLookups);
  const api: HttpLimiter<Req> = { options: o, limiter, handle, handleNow, route, scopeOf, claim, health };
  return api;
}
