// The framework-free request pipeline the adapters share: facts in; decision, status, headers and body out.
import type { Decision } from '../decision';
import { FloodgateError } from '../errors';
import { formatHeaders, type HeaderPair } from '../headers/format-headers';
import { PROBLEM_CONTENT_TYPE, problemDetails } from '../headers/problem-details';
import { createIdentify, type Identify, type Identity, type RequestFacts } from '../identity';
import { createLimiter, type Limiter } from '../limiter';
import { MemoryStore } from '../stores/memory-store';
import { HTTP_KEYS, resolveHttpOptions, type HttpRateLimitOptions, type RateLimitEvent, type ResolvedHttpOptions } from './resolve-http-options';

/** The scope of requests that matched no route: one bucket per caller, so raw URLs never mint buckets. */
export const UNMATCHED_SCOPE = '<unmatched>';
/** Most plan limiters (API keys whose `resolveKey` answer carries `limits`) kept per route. */
const MAX_PLANS = 1000;

/** What an adapter does with one request. */
export interface HttpResult {
  /** Undefined only for 401 (an unknown API key with `unknownKey: 'reject'`): nothing was limited. */
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
}

export interface HttpLimiter<Req = unknown> {
  readonly options: ResolvedHttpOptions<Req>;
  readonly limiter: Limiter;
  /** Decides one request. Rejects only when a cost or key function fails or returns a bad cost. */
  handle(facts: RequestFacts, request: Req): Promise<HttpResult>;
  /** The same decision, returned synchronously when nothing had to wait (adapters use it to answer a blocked caller at once). */
  handleNow(facts: RequestFacts, request: Req): HttpResult | Promise<HttpResult>;
  /** A limiter for one route: these overrides merged over the global options, on the same store. false: no limit. */
  route(overrides: HttpRateLimitOptions<Req> | false | undefined): HttpLimiter<Req> | null;
  /** The bucket scope: the group, `METHOD /pattern` (HEAD counts as GET), or '<unmatched>' when no route matched. */
  scopeOf(facts: Pick<RequestFacts, 'method' | 'route'>): string;
}

interface Shared {
  limiter: Limiter;
  identify: Identify;
}

const HTTP_ONLY: ReadonlySet<string> = new Set(HTTP_KEYS);
const UNAUTHORIZED = JSON.stringify({ type: 'about:blank', title: 'Unauthorized', status: 401, detail: 'Unknown API key.' });
const UNAUTHORIZED_HEAD = ['Content-Type', PROBLEM_CONTENT_TYPE, 'Content-Length', String(Buffer.byteLength(UNAUTHORIZED))];

/** The flat header list of a response written directly: the rate-limit headers, then the body's type and length. */
function directHead(headers: readonly HeaderPair[], length: string): string[] {
  const head: string[] = [];
  for (const [name, value] of headers) head.push(name, value);
  head.push('Content-Type', PROBLEM_CONTENT_TYPE, 'Content-Length', length);
  return head;
}

function validCost(cost: unknown): number {
  if (typeof cost !== 'number' || !Number.isInteger(cost) || cost < 0) {
    throw new FloodgateError('FG_INVALID_COST', `Invalid cost: the cost function returned ${String(cost)}; expected a whole number from 0.`);
  }
  return cost;
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
  let key = `${decision.reason === 'fail-closed' ? 'c' : 'r'}${retryAfter ?? ''}`;
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
export function createHttpLimiter<Req = unknown>(options: HttpRateLimitOptions<Req> = {}): HttpLimiter<Req> {
  const global = { ...options, store: options?.store ?? new MemoryStore() };
  const resolved = resolveHttpOptions(global);
  return build(global, resolved, { limiter: createLimiter(resolved.limiter), identify: createIdentify(resolved.identity) });
}

function build<Req>(global: HttpRateLimitOptions<Req>, o: ResolvedHttpOptions<Req>, shared: Shared): HttpLimiter<Req> {
  const { limiter, identify } = shared;
  const plans = new Map<string, Limiter>();

  function scopeOf(facts: Pick<RequestFacts, 'method' | 'route'>): string {
    if (o.group !== undefined) return o.group;
    if (facts.route === undefined) return UNMATCHED_SCOPE;
    const method = facts.method.toUpperCase();
    // HEAD is GET without a body: one bucket, or HEAD would double a caller's GET quota.
    return `${method === 'HEAD' ? 'GET' : method} ${facts.route}`;
  }

  /** Synchronous unless a `key` function or a `resolveKey` lookup makes it wait: no await when nothing waits. */
  function identityOf(facts: RequestFacts, request: Req, cost: number, scope: string): Identity | Promise<Identity> {
    // Cheapest first: a caller the block cache denies is answered without a resolveKey lookup.
    const builtIn = () => identify(facts, { isBlocked: (id) => limiterFor(id).blocked(id.subject, { cost, scope }) !== undefined });
    if (!o.key) return builtIn();
    return Promise.resolve(o.key(request)).then((raw) =>
      (typeof raw === 'string' && raw !== '') || (typeof raw === 'number' && Number.isFinite(raw))
        ? { subject: `custom:${raw}`, kind: 'custom' as const }
        : builtIn(),
    );
  }

  /** The key's own plan (from resolveKey) replaces the route's limits; one limiter per plan, on the same store. */
  function limiterFor(identity: Identity): Limiter {
    if (!identity.limits || !identity.plan) return limiter;
    let planned = plans.get(identity.plan);
    if (!planned) {
      const { limit: _l, burst: _b, refillPerSecond: _r, name: _n, ...rest } = o.limiter;
      try {
        planned = createLimiter({ ...rest, limits: [...identity.limits] });
      } catch {
        return limiter; // identity already warned (FG_RESOLVE_KEY_BAD_PLAN); the route's limits apply
      }
      if (plans.size >= MAX_PLANS) plans.delete(plans.keys().next().value as string);
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
      if (typeof o.cost !== 'function') return withCost(facts, request, o.cost);
      return Promise.resolve(o.cost(request)).then((cost) => withCost(facts, request, validCost(cost)));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  function withCost(facts: RequestFacts, request: Req, cost: number): HttpResult | Promise<HttpResult> {
    const scope = scopeOf(facts);
    const pending = identityOf(facts, request, cost, scope);
    return pending instanceof Promise
      ? pending.then((identity) => withIdentity(identity, request, cost, scope))
      : withIdentity(pending, request, cost, scope);
  }

  function withIdentity(identity: Identity, request: Req, cost: number, scope: string): HttpResult | Promise<HttpResult> {
    if (identity.rejected) {
      const direct = o.respondDirectly ? UNAUTHORIZED_HEAD : undefined;
      return { decision: undefined, status: 401, headers: [], body: UNAUTHORIZED, contentType: PROBLEM_CONTENT_TYPE, direct };
    }
    const chosen = limiterFor(identity);
    const options = { cost, scope };
    // A caller the block cache denies is answered synchronously: the flood of 429s skips the store's promise chain.
    const blocked = chosen.blocked(identity.subject, options);
    if (blocked) return respond(blocked, request, cost, scope, identity);
    return chosen.consume(identity.subject, options).then((decision) => respond(decision, request, cost, scope, identity));
  }

  function respond(decision: Decision, request: Req, cost: number, scope: string, identity: Identity): HttpResult | Promise<HttpResult> {
    const event: RateLimitEvent<Req> = { request, decision, scope, cost, identity: identity.kind, shadow: o.shadow };
    o.onDecision?.(event);
    if (!decision.allowed) o.onLimited?.(event);

    const enforce = !decision.allowed && !o.shadow;
    const headers = formatHeaders(decision, o.dialects, { retryAfter: enforce, retryAfterJitterMs: o.retryAfterJitterMs });
    if (!enforce) return { decision, status: 'next', headers };
    const status = decision.reason === 'fail-closed' ? 503 : 429;
    if (status === 429 && o.handler) {
      const handler = o.handler;
      return Promise.resolve(handler(request, event)).then((body) => ({ decision, status, headers, body }));
    }
    const retryAfter = headers.find(([name]) => name === 'Retry-After');
    const { body, length } = problemBody(decision, cost, retryAfter ? Number(retryAfter[1]) : undefined);
    return { decision, status, headers, body, contentType: PROBLEM_CONTENT_TYPE, direct: o.respondDirectly ? directHead(headers, length) : undefined };
  }

  async function handle(facts: RequestFacts, request: Req): Promise<HttpResult> {
    return handleNow(facts, request);
  }

  function route(overrides: HttpRateLimitOptions<Req> | false | undefined): HttpLimiter<Req> | null {
    if (overrides === false) return null;
    if (overrides === undefined) return api;
    const resolved = resolveHttpOptions(global, overrides);
    // Overrides of HTTP options only (cost, group, headers, ...) keep the global limiter and its block
    // cache; anything else (limits, failMode, identity options) gets its own, on the same store.
    const own = Object.entries(overrides).some(([k, v]) => v !== undefined && !HTTP_ONLY.has(k));
    return build(global, resolved, own ? { limiter: createLimiter(resolved.limiter), identify: createIdentify(resolved.identity) } : shared);
  }

  const api: HttpLimiter<Req> = { options: o, limiter, handle, handleNow, route, scopeOf };
  return api;
}
