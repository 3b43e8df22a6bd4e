// Step: the extra keys of an admitted request, one after another: all admit, or the ones charged are given back and the denial answers.
import type { Decision } from '../decision';
import { refundAll, settlerOf } from './charges';
import { isKeyValue } from './request-identity';
import { respond } from './responses';
import type { Charge, HttpResult, Identified } from './types';

/**
 * Counts the request against each extra key, each only once the ones before admitted. Sequential
 * on purpose: a parallel check would charge keys a denial then has to give back, and other
 * requests would see those units. A failing key function gives every charge back and rejects.
 * With `countOnly`, the answer carries the settle function that decides whether the charges stay.
 */
export async function checkExtraKeys<Req>(ctx: Identified<Req>, main: Decision, charges: Charge[]): Promise<HttpResult> {
  const { pipe, request, cost } = ctx;
  try {
    for (const extra of pipe.extras) {
      const raw = await extra.key(request);
      if (!isKeyValue(raw)) continue;
      const subject = `${extra.name}:${raw}`;
      const scope = `${ctx.scope}#${extra.name}`;
      extra.claim(scope);
      const decision = await extra.limiter.consume(subject, { cost, scope });
      if (decision.at !== undefined) charges.push({ limiter: extra.limiter, subject, scope, at: decision.at, name: extra.name });
      if (!decision.allowed) {
        refundAll(charges, cost);
        void main.lease?.release();
        return respond(ctx, decision);
      }
    }
  } catch (error) {
    refundAll(charges, cost); // a failing key function must not leave units charged
    void main.lease?.release();
    throw error;
  }
  const result = await respond(ctx, main);
  if (!pipe.o.countOnly || charges.length === 0) return result;
  // countOnly's settle, and the in-flight slot's release (respond's settle) when the request holds one.
  const counting = settlerOf(ctx, charges);
  const releasing = result.settle;
  return { ...result, settle: releasing ? (status) => (counting(status), releasing(status)) : counting };
}
