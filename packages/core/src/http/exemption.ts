// Step: is this request exempt (allowList, `skip`)? An exempt request is served as if no limiter ran.
import type { RequestFacts } from '../identity';
import { isThenable } from '../base/maybe-promise';
import type { ResolvedHttpOptions } from './resolve-http-options';

/**
 * True when the request is exempt, false when it counts, or a promise of that when `skip` waits
 * (any thenable it returns is waited for). Only `true` from `skip` exempts. A throwing `skip` throws.
 */
export function exemptionOf<Req>(o: ResolvedHttpOptions<Req>, facts: RequestFacts, request: Req): boolean | Promise<boolean> {
  if (o.allowList?.(facts.ip)) return true;
  if (!o.skip) return false;
  const skip: unknown = o.skip(request);
  return isThenable(skip) ? Promise.resolve(skip).then((yes) => yes === true) : skip === true;
}
