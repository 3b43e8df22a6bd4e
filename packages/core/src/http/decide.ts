// Step: the decision for an identified request: an unknown key's 401 (counted on its IP), the block cache, or one consume.
import type { Decision } from '../model/decision';
import type { EngineLimiter } from '../engine/limiter';
import { isThenable } from '../base/maybe-promise';
import { checkExtraKeys } from './extra-key-checks';
import { respond, unauthorized } from './responses';
import type { Charge, HttpResult, Identified } from './types';
import { shaped } from './shape';

/**
 * Decides an identified request. Synchronous when nothing has to wait: a caller the block cache
 * denies is answered at once (a flood of 429s skips the store's promise chain), and with no charges
 * to track a store that decides synchronously (MemoryStore) serves it in the same turn.
 */
export function decide<Req>(ctx: Identified<Req>): HttpResult | Promise<HttpResult> {
  const { pipe, identity } = ctx;
  const chosen = pipe.limiterFor(identity);
  if (identity.rejected) return unknownKey(ctx, chosen);
  const blocked = chosen.blocked(identity.subject, ctx);
  if (blocked) return respond(ctx, blocked);
  // Shaping: the decision may hold the request for its slot first.
  if (pipe.holds) return shaped(ctx, chosen, pipe.holds, (decision) => (pipe.plain ? respond(ctx, decision) : charged(ctx, chosen, decision)));
  if (pipe.plain) {
    const decision = chosen.consumeNow(identity.subject, ctx);
    return isThenable(decision) ? decision.then((d) => respond(ctx, d)) : respond(ctx, decision);
  }
  return chosen.consume(identity.subject, ctx).then((decision) => charged(ctx, chosen, decision));
}

/**
 * An unknown key is answered 401, but counted against its client IP: past the IP's limit the
 * answer is that IP's 429, so guessing keys is limited like any other request.
 */
function unknownKey<Req>(ctx: Identified<Req>, chosen: EngineLimiter): Promise<HttpResult> {
  return chosen.consume(ctx.identity.subject, ctx).then((decision) => {
    if (!decision.allowed && !decision.degraded) return respond(ctx, decision);
    void decision.lease?.release(); // the 401 holds no slot
    return unauthorized(ctx.pipe);
  });
}

/** The request's own charge recorded (for refunds and `countOnly`), then its extra keys if it was admitted. */
function charged<Req>(ctx: Identified<Req>, chosen: EngineLimiter, decision: Decision): HttpResult | Promise<HttpResult> {
  const charges: Charge[] = [];
  if (decision.at !== undefined) charges.push({ limiter: chosen, subject: ctx.identity.subject, scope: ctx.scope, at: decision.at });
  if (!decision.allowed) return respond(ctx, decision);
  return checkExtraKeys(ctx, decision, charges);
}
