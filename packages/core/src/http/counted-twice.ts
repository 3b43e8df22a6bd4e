// FG_COUNTED_TWICE: the same request counted by two limiters (two app-level rateLimit()s), seen on each route's first requests.
import type { Logger } from '../base/logger';
import { warnOnce, type WarningCode } from '../base/warnings';

/** Requests a limiter counted, with the label of the first limiter that did: held only as long as the request lives. */
const countedBy = new WeakMap<object, { readonly label: string }>();
/** Requests checked per scope: a second limiter on a route counts every request of it, so its first few show it. */
const CHECKS_PER_SCOPE = 4;
/** Scopes a limiter checks at most (the check stops for good past it). */
const SCOPES_CHECKED = 1000;

/**
 * The check for one limiter (undefined when switched off, or for a shadow limiter, which is meant to
 * run beside the real one): call it with each request it counts. Only the first requests of each
 * scope are marked, so a busy app pays nothing once its routes have been seen.
 */
export function countedTwiceCheck(
  label: string,
  shadow: boolean,
  logger: Pick<Logger, 'warn'>,
  on: ReadonlySet<WarningCode>,
): ((request: unknown, scope: string) => void) | undefined {
  if (shadow || !on.has('FG_COUNTED_TWICE')) return undefined;
  const checks = new Map<string, number>();
  let open = true;
  const me = { label };
  // The last scope whose checks were all made: its next requests skip the Map.
  let done: string | undefined;
  return (request, scope) => {
    if (!open || scope === done || request === null || typeof request !== 'object') return;
    const n = checks.get(scope) ?? 0;
    if (n >= CHECKS_PER_SCOPE) {
      done = scope;
      return;
    }
    if (n === 0 && checks.size >= SCOPES_CHECKED) {
      open = false;
      return;
    }
    checks.set(scope, n + 1);
    const first = countedBy.get(request);
    if (first === undefined) {
      countedBy.set(request, me);
      return;
    }
    if (first === me) return; // the same limiter asked twice about one request, not two limiters
    open = false;
    warnOnce(
      logger,
      on,
      'FG_COUNTED_TWICE',
      `one request to ${scope} was counted by ${first.label} and again by ${label}: every request there spends twice, and its headers come from the last. Keep one app-level limiter and give it several limits (limits: [...]), or mount the second on its routes with limiter.route({ ... }); a trial limiter beside the real one takes shadow: true (docs/adapters.md)`,
    );
  };
}
