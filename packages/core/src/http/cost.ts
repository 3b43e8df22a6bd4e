// Step: the units this request draws, from the route's `cost` (a number, or a function of the request).
import { isThenable } from '../base/maybe-promise';
import { requestCost } from '../base/validate';
import type { RequestContext } from './types';

const FROM_FUNCTION = 'the cost function returned';

/**
 * The request's cost: at once for a number or a function that answers at once, else a promise (any
 * thenable the function returns is waited for). Throws (or rejects) FG_INVALID_COST for a bad answer.
 */
export function costOf<Req>(ctx: RequestContext<Req>): number | Promise<number> {
  const cost = ctx.pipe.o.cost;
  if (typeof cost !== 'function') return cost;
  const raw: unknown = cost(ctx.request);
  return isThenable(raw) ? Promise.resolve(raw).then((c) => requestCost(c, FROM_FUNCTION)) : requestCost(raw, FROM_FUNCTION);
}
