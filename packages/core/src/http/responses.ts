// Step: a decision as the adapter's answer: hooks, headers, status and body (the default problem+json rendered once per distinct body).
import { bareDecision, type Decision } from '../model/decision';
import { formatHeaders, type HeaderPair } from '../headers/format-headers';
import { PROBLEM_CONTENT_TYPE, problemDetails } from '../headers/problem-details';
import { Memo } from '../base/memo';
import { utf8Length } from '../base/utf8';
import type { RequestFacts } from '../identity';
import type { RateLimitEvent } from './resolve-http-options';
import type { HttpResult, Identified, Pipeline } from './types';
import { reservationOf } from './usage-route';

/** An exempt request (allow list, `skip`): served as if no limiter ran. */
export const EXEMPT_RESULT: HttpResult = Object.freeze({ decision: undefined, status: 'next', headers: [] });

const UNAUTHORIZED = JSON.stringify({ type: 'about:blank', title: 'Unauthorized', status: 401, detail: 'Unknown API key.' });
const UNAUTHORIZED_HEAD = ['Content-Type', PROBLEM_CONTENT_TYPE, 'Content-Length', String(utf8Length(UNAUTHORIZED))];

/** The 401 for an unknown API key (`unknownKey: 'reject'`). */
export function unauthorized<Req>(pipe: Pipeline<Req>): HttpResult {
  const direct = pipe.o.respondDirectly ? UNAUTHORIZED_HEAD : undefined;
  return { decision: undefined, status: 401, headers: [], body: UNAUTHORIZED, contentType: PROBLEM_CONTENT_TYPE, direct };
}

/**
 * A request shed by an overloaded instance (option `shedding`) or by the fleet's budget (`fleet`):
 * 503 with Retry-After and the problem type the draft names for it. The hooks are told, as for any
 * denied decision; the request is shed before its cost or its caller is known (shedding must stay
 * cheap), so its event says `cost: 0` (it drew nothing) and `identity: 'none'`, and `shadow: false`
 * (shedding is enforced whatever `shadow` says). `handler` is not called: it makes 429 bodies.
 */
export function shed<Req>(pipe: Pipeline<Req>, facts: RequestFacts, request: Req, retryAfterMs: number): HttpResult {
  const decision = bareDecision(false, 'shed', retryAfterMs);
  const o = pipe.o;
  if (o.onDecision || o.onLimited) {
    const event: RateLimitEvent<Req> = { request, decision, scope: pipe.scopeOf(facts), cost: 0, identity: 'none', shadow: false };
    o.onDecision?.(event);
    o.onLimited?.(event);
  }
  const headers = formatHeaders(decision, pipe.o.dialects, pipe.enforced);
  const { body, length } = problemBody(decision, 1, retryAfterOf(headers));
  return { decision, status: 503, headers, body, contentType: PROBLEM_CONTENT_TYPE, direct: pipe.o.respondDirectly ? directHead(headers, length) : undefined };
}

/** The flat header list of a response written directly: the rate-limit headers, then the body's type and length. */
function directHead(headers: readonly HeaderPair[], length: string): string[] {
  const n = headers.length * 2;
  const head: string[] = new Array(n + 4);
  for (let i = 0; i < headers.length; i++) {
    head[2 * i] = headers[i][0];
    head[2 * i + 1] = headers[i][1];
  }
  head[n] = 'Content-Type';
  head[n + 1] = PROBLEM_CONTENT_TYPE;
  head[n + 2] = 'Content-Length';
  head[n + 3] = length;
  return head;
}

/** The Retry-After value among these headers (formatHeaders writes it last), as a number; undefined without one. */
function retryAfterOf(headers: readonly HeaderPair[]): number | undefined {
  for (let i = headers.length - 1; i >= 0; i--) if (headers[i][0] === 'Retry-After') return Number(headers[i][1]);
  return undefined;
}

/** Default bodies already rendered, by what they say: a flood of 429s renders each distinct body once. */
const bodies = new Memo<{ body: string; length: string }>(1000);

/** A body rendered lately, by what it says: the kind of refusal, Retry-After and the denying policies. */
interface RecentBody {
  kind: string;
  retryAfter: number | undefined;
  policies: string[];
  rendered: { body: string; length: string };
}
/**
 * The last few bodies, found without building the memo's key string (a flood of 429s repeats a
 * couple of them: Retry-After's jitter gives each block two or three values). Policy names are
 * compared as the strings the limits hold.
 */
const recent: RecentBody[] = [];
const RECENT_MAX = 4;

function recentBody(kind: string, retryAfter: number | undefined, decision: Decision, policiesToo: boolean): RecentBody | undefined {
  search: for (let r = 0; r < recent.length; r++) {
    const entry = recent[r];
    if (entry.kind !== kind || entry.retryAfter !== retryAfter) continue;
    let n = 0;
    if (policiesToo) {
      for (let i = 0; i < decision.limits.length; i++) {
        const l = decision.limits[i];
        if (l.allowed) continue;
        if (n >= entry.policies.length || entry.policies[n++] !== l.policy) continue search;
      }
    }
    if (n === entry.policies.length) return entry;
  }
  return undefined;
}

function problemBody(decision: Decision, cost: number, retryAfter: number | undefined): { body: string; length: string } {
  const render = () => {
    const body = JSON.stringify(problemDetails(decision, cost, retryAfter));
    return { body, length: String(utf8Length(body)) };
  };
  // "Can never be admitted" also names the cost and the limit: rare, rendered each time.
  if (decision.reason !== 'fail-closed' && decision.reason !== 'shed' && decision.retryAfterMs < 0) return render();
  const kind = decision.reason === 'fail-closed' ? 'c' : decision.reason === 'shed' ? 's' : decision.reason === 'locked' ? 'l' : 'r';
  const policiesToo = kind !== 'c' && kind !== 's';
  const seen = recentBody(kind, retryAfter, decision, policiesToo);
  if (seen !== undefined) return seen.rendered;
  let key = `${kind}${retryAfter ?? ''}`;
  const policies: string[] = [];
  if (policiesToo) for (const l of decision.limits) if (!l.allowed) (key += `\u0000${l.policy}`), policies.push(l.policy);
  let hit = bodies.get(key);
  if (hit === undefined) bodies.set(key, (hit = render()));
  if (recent.length >= RECENT_MAX) recent.shift();
  recent.push({ kind, retryAfter, policies, rendered: hit });
  return hit;
}

/**
 * The answer for a decision: the hooks told (their event built only when one will read it), the
 * headers, and for an enforced denial 429 (or 503 for fail-closed) with the handler's body or the
 * default problem+json. Synchronous unless a `handler` makes the body.
 */
export function respond<Req>(ctx: Identified<Req>, decision: Decision): HttpResult | Promise<HttpResult> {
  const o = ctx.pipe.o;
  let event: RateLimitEvent<Req> | undefined;
  if (o.onDecision || (!decision.allowed && (o.onLimited || o.handler))) {
    event = { request: ctx.request, decision, scope: ctx.scope, cost: ctx.cost, identity: ctx.identity.kind, shadow: o.shadow };
    o.onDecision?.(event);
    if (!decision.allowed) o.onLimited?.(event);
  }

  const enforce = !decision.allowed && !o.shadow;
  const headers = formatHeaders(decision, o.dialects, enforce ? ctx.pipe.enforced : ctx.pipe.served);
  if (!enforce) {
    // An in-flight slot (option `concurrency`) is held until the response finishes or the connection closes (finishOnResponse).
    const lease = decision.lease;
    const result: HttpResult = lease ? { decision, status: 'next', headers, ...finishing(() => void lease.release()) } : { decision, status: 'next', headers };
    // Reserve, then settle: only where the app asked for it (a token and a closure per request).
    if (!o.limiter.settle.enabled) return result;
    const reservation = reservationOf(ctx, decision);
    return reservation ? { ...result, reservation } : result;
  }
  const status = decision.reason === 'fail-closed' ? 503 : 429;
  if (status === 429 && o.handler) {
    const handler = o.handler;
    return Promise.resolve(handler(ctx.request, event!)).then((body) => ({ decision, status, headers, body }));
  }
  const { body, length } = problemBody(decision, ctx.cost, retryAfterOf(headers));
  return { decision, status, headers, body, contentType: PROBLEM_CONTENT_TYPE, direct: o.respondDirectly ? directHead(headers, length) : undefined };
}

/** A result's finish hook, under its name and its deprecated one (`settle`), for adapters written before the rename. */
export function finishing(finish: (status: number | undefined) => void): { finish: typeof finish; settle: typeof finish } {
  return { finish, settle: finish };
}
