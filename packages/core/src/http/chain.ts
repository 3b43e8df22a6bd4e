// The pipeline's order, in one place: exemption, cost, scope, identity, decision (then extra keys and the response).
import type { Identity, RequestFacts } from '../identity';
import { isThenable } from '../base/maybe-promise';
import { costOf } from './cost';
import { decide } from './decide';
import { exemptionOf } from './exemption';
import { identityOf } from './request-identity';
import { finishing, shed, EXEMPT_RESULT } from './responses';
import type { HttpResult, Identified, Pipeline, RequestContext } from './types';

/**
 * Decides one request; synchronous when nothing has to wait (no `skip`, cost or key function
 * promise, no resolveKey lookup, a caller answered from the block cache or a synchronous store),
 * so a flood of 429s never waits a turn of the event loop. A synchronous throw becomes a rejected promise.
 */
export function handleNow<Req>(pipe: Pipeline<Req>, facts: RequestFacts, request: Req): HttpResult | Promise<HttpResult> {
  try {
    const exempt = exemptionOf(pipe.o, facts, request);
    if (exempt === true) return EXEMPT_RESULT;
    if (exempt === false) return shedOrCounted(pipe, facts, request);
    return exempt.then((yes) => (yes ? EXEMPT_RESULT : shedOrCounted(pipe, facts, request)));
  } catch (error) {
    return Promise.reject(error);
  }
}

/** Cheapest first: an overloaded instance sheds the route's class before any lookup or store call; then the fleet's budget. */
function shedOrCounted<Req>(pipe: Pipeline<Req>, facts: RequestFacts, request: Req): HttpResult | Promise<HttpResult> {
  const { shedder, fleet } = pipe.family;
  if (shedder && shedder.sheds(pipe.o.priority)) return shed(pipe, facts, request, shedder.retryAfterMs);
  if (!fleet) return counted(contextOf(pipe, facts, request));
  return fleet.acquire(pipe.o.priority).then((slot) => {
    if (!slot.allowed && slot.reason !== 'fail-closed') return shed(pipe, facts, request, Math.max(1000, slot.retryAfterMs));
    if (!slot.allowed) return counted(contextOf(pipe, facts, request)); // the store is down: the route's own failure mode answers
    const lease = slot.lease;
    if (!lease) return counted(contextOf(pipe, facts, request));
    const release = () => void lease.release();
    return Promise.resolve(counted(contextOf(pipe, facts, request))).then(
      (result) => {
        // The fleet's slot is held while the request is served, like the caller's own (finishOnResponse).
        if (result.status !== 'next') return release(), result;
        const finish = result.finish;
        return { ...result, ...finishing(finish ? (status: number | undefined) => (finish(status), release()) : release) };
      },
      (error: unknown) => {
        release();
        throw error;
      },
    );
  });
}

/** A request's context, every field present from the start (one object shape for every request). */
function contextOf<Req>(pipe: Pipeline<Req>, facts: RequestFacts, request: Req): RequestContext<Req> {
  return { pipe, facts, request, cost: 1, scope: '', identity: undefined };
}

/** A request that is not exempt: its cost first (a bad one fails before any lookup or store call). */
function counted<Req>(ctx: RequestContext<Req>): HttpResult | Promise<HttpResult> {
  const cost = costOf(ctx);
  return isThenable(cost) ? cost.then((c) => priced(ctx, c)) : priced(ctx, cost);
}

/** Its scope (its buckets claimed at the first request of it), then its identity. */
function priced<Req>(ctx: RequestContext<Req>, cost: number): HttpResult | Promise<HttpResult> {
  ctx.cost = cost;
  ctx.scope = ctx.pipe.scopeOf(ctx.facts);
  ctx.pipe.claim(ctx.scope);
  ctx.pipe.countedTwice?.(ctx.request, ctx.scope);
  const identity = identityOf(ctx);
  return isThenable(identity) ? identity.then((id) => decide(identified(ctx, id))) : decide(identified(ctx, identity));
}

function identified<Req>(ctx: RequestContext<Req>, identity: Identity): Identified<Req> {
  ctx.identity = identity;
  return ctx as Identified<Req>;
}
