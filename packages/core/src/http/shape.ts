// Step: shaping (route option `shape`): a request over its rate is held for the slot the store reserved for it, or refused as before; a caller that goes away gives the slot back.
import type { ServerResponse } from 'node:http';
import type { Decision } from '../model/decision';
import type { EngineLimiter } from '../engine/limiter';
import type { HttpResult, Identified } from './types';
import type { Holds } from './shape-options';

/** The response a held request gets when its caller went away: nothing to send (the socket is gone), the handler never runs. */
function goneResult(decision: Decision): HttpResult {
  return { decision: { ...decision, allowed: false }, status: 429, headers: [] };
}

/**
 * Decides a request on a shaped route: with room under maxWaiting, a consume that may be held
 * (`maxDelayMs`); without, a plain one (over its rate: the 429 of today). A held decision waits on
 * one unref'd timer until its slot, then goes on (`then`); if the caller goes away first
 * (facts.signal), the timer is cleared and the units are refunded.
 */
export function shaped<Req>(
  ctx: Identified<Req>,
  chosen: EngineLimiter,
  holds: Holds,
  then: (decision: Decision) => HttpResult | Promise<HttpResult>,
): Promise<HttpResult> {
  const room = holds.waiting < holds.shape.maxWaiting;
  if (room) holds.waiting++;
  const options = room ? { cost: ctx.cost, scope: ctx.scope, maxDelayMs: holds.shape.maxDelayMs } : ctx;
  return chosen.consume(ctx.identity.subject, options).then(
    (decision) => {
      if (!decision.delayMs) {
        if (room) holds.waiting--;
        return then(decision);
      }
      return heldFor(ctx, chosen, decision).then((stayed) => {
        holds.waiting--;
        return stayed ? Promise.resolve(then(decision)).then(withDelay) : goneResult(decision);
      });
    },
    (error: unknown) => {
      if (room) holds.waiting--;
      throw error;
    },
  );
}

/** Waits out the decision's delay: true at its slot, false when the caller went away first (its units refunded). */
function heldFor<Req>(ctx: Identified<Req>, chosen: EngineLimiter, decision: Decision): Promise<boolean> {
  const signal = ctx.facts.signal;
  const giveBack = () => void chosen.refund(ctx.identity.subject, { at: decision.at!, cost: ctx.cost, scope: ctx.scope });
  if (signal?.aborted) return (giveBack(), Promise.resolve(false));
  return new Promise((resolve) => {
    const gone = () => {
      clearTimeout(timer);
      giveBack();
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', gone);
      resolve(true);
    }, decision.delayMs);
    // A held request never keeps a process alive that is shutting down (its socket does, while open).
    timer.unref();
    signal?.addEventListener('abort', gone, { once: true });
  });
}

/** A held request's answer with the header that says so. */
function withDelay(result: HttpResult): HttpResult {
  const header = result.decision && delayHeader(result.decision);
  return header ? { ...result, headers: [...result.headers, header] } : result;
}

/** The header that says a request was held, and for how long: `Server-Timing: floodgate-delay;dur=<ms>` (docs/shaping.md). */
export function delayHeader(decision: Decision): [string, string] | undefined {
  return decision.delayMs ? ['Server-Timing', `floodgate-delay;dur=${decision.delayMs}`] : undefined;
}

/**
 * An AbortSignal that aborts when the client goes away before the response finished (Node's
 * response 'close'): what an adapter on Node passes as `facts.signal` on a shaped route.
 */
export function signalOnClose(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  if (res.destroyed || res.socket?.destroyed) controller.abort();
  else res.once('close', () => (res.writableFinished ? undefined : controller.abort()));
  return controller.signal;
}
