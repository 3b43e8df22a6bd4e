// Step: the units a request drew, given back when it should not count (a denial after others admitted, `countOnly`), and `resetOnSuccess`.
import type { Logger } from '../base/logger';
import type { Charge, Identified, ResetReport } from './types';

/** Gives every charge of a request back (best effort: a store failure keeps the unit charged, the safe side). */
export function refundAll(charges: readonly Charge[], cost: number): void {
  for (const c of charges) void c.limiter.refund(c.subject, { cost, scope: c.scope, at: c.at });
}

/**
 * Failed `resetOnSuccess` resets, logged: the first failure of a run, so an outage is one line and
 * not one per successful login; a reset that succeeds ends the run.
 */
export class ResetLog implements ResetReport {
  private failing = false;
  constructor(private readonly logger: Logger) {}

  succeeded(): void {
    this.failing = false;
  }

  failed(charge: Charge, error: unknown): void {
    if (this.failing) return;
    this.failing = true;
    const message = error instanceof Error ? error.message : String(error);
    this.logger.warn(`[floodgate] resetOnSuccess could not clear extra key \`${charge.name}\` in \`${charge.scope}\`: its count stays (${message})`, {
      store: charge.limiter.options.store.name,
      key: charge.name,
      scope: charge.scope,
      error,
    });
  }
}

/**
 * `countOnly`: the finish hook of one request (its verdict). Once the response is known it gives the units
 * back when the request should not count, and on a success clears the `resetOnSuccess` keys.
 * Runs once however often it is called; never throws.
 */
export function countOnlyVerdictOf<Req>(ctx: Identified<Req>, charges: readonly Charge[]): (status: number | undefined) => void {
  const { pipe, request, cost } = ctx;
  const o = pipe.o;
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
      if (c.name === undefined || !o.resetOnSuccess.has(c.name)) continue;
      c.limiter.reset(c.subject, { scope: c.scope }).then(
        () => pipe.resets.succeeded(),
        (error: unknown) => pipe.resets.failed(c, error),
      );
    }
  };
}
