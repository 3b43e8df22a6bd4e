// Reporting a store's failures: one line at the first failed call of an outage, then one per breaker state change, to each logger and hook once.
import type { Logger } from '../base/logger';
import { isThenable } from '../base/maybe-promise';
import type { BreakerTransition, CircuitBreaker } from './breaker';
import type { FailMode, StoreErrorEvent } from './policy';

type Hook = ((event: StoreErrorEvent) => void) | undefined;

interface Reporter {
  readonly logger: Logger;
  readonly hook: Hook;
  /** The failure modes of the limiters reporting here: what the endpoints on this store now do. */
  readonly failModes: Set<FailMode>;
}

/** What an endpoint does while its store cannot decide, in the words of the first-failure line. */
const FAIL_MODE_DOES: Record<FailMode, string> = {
  open: 'served without limiting',
  closed: 'refused with 503 and Retry-After',
  local: "limited from this instance's memory with its share of the limit",
};

/**
 * The reporters of one breaker. Limiters that share a store share its breaker; with the same logger
 * and hook (every route of one app) a change is reported once, and the first-failure line names
 * every failMode.
 */
export class Reporters {
  private readonly list: Reporter[] = [];

  constructor(
    private readonly breaker: CircuitBreaker,
    private readonly store: string,
  ) {
    breaker.subscribe((t) => {
      for (const r of this.list) report(t, store, r.logger, r.hook);
    });
  }

  /** Reports this breaker's changes to this logger and hook (once however many limiters ask). */
  add(logger: Logger, hook: Hook, failMode: FailMode): void {
    const known = this.list.find((r) => r.logger === logger && r.hook === hook);
    if (known) known.failModes.add(failMode);
    else this.list.push({ logger, hook, failModes: new Set([failMode]) });
  }

  /**
   * The first request the script failed on its own subject (FG_STORE_SCRIPT): one line per logger,
   * once per store; the rest are counted (scriptErrors in health()), never logged per request.
   */
  scriptError(error: unknown): void {
    for (const r of this.list) {
      try {
        r.logger.error(
          `[floodgate] store "${this.store}": the script failed for one subject (${describe(error)}). Such requests are limited from this instance's memory with its share of the limit, whatever the failMode; the store is not counted as failing. Logged once; health() counts them (scriptErrors).`,
          { store: this.store, error: describe(error) },
        );
      } catch {
        // A broken logger must not break requests.
      }
    }
  }

  /** The first failed call of an outage, made by a limiter with this failMode: one line per logger. */
  firstFailure(error: unknown, failMode: FailMode): void {
    for (const r of this.list) reportFirstFailure(error, failMode, this.store, r, this.breaker.options.failureThreshold);
  }
}

/** One line at the first failed call of an outage: what failed and what the endpoints now do. Logger only: the hook hears state changes. */
function reportFirstFailure(error: unknown, failMode: FailMode, store: string, reporter: Reporter, threshold: number): void {
  const mode = reporter.failModes.has(failMode) ? failMode : [...reporter.failModes][0];
  const others = [...reporter.failModes].filter((m) => m !== mode);
  const also = others.length ? ` Other endpoints on this store: ${others.map((m) => `${FAIL_MODE_DOES[m]} (failMode '${m}')`).join('; ')}.` : '';
  const circuit = threshold > 1 ? ` The circuit opens after ${threshold} failures in a row.` : '';
  try {
    reporter.logger.error(
      `[floodgate] store "${store}" failed (${describe(error)}): requests it cannot decide are now ${FAIL_MODE_DOES[mode]} (failMode '${mode}').${also} Logged once until the store answers again.${circuit}`,
      { store, failMode: mode, failModes: [...reporter.failModes], error: describe(error) },
    );
  } catch {
    // A broken logger must not break requests.
  }
}

function report(t: BreakerTransition, store: string, logger: Logger, hook: Reporter['hook']): void {
  const event: StoreErrorEvent = { state: t.to, previous: t.from, store, error: t.error, failures: t.failures, retryInMs: t.retryInMs };
  const details = { store, state: t.to, previous: t.from, failures: t.failures, retryInMs: t.retryInMs, error: describe(t.error) };
  try {
    if (t.to === 'open') {
      logger.error(
        t.from === 'half-open'
          ? `[floodgate] store "${store}" still failing (${describe(t.error)}); circuit open again: next probe in ${t.retryInMs} ms, failure modes apply.`
          : `[floodgate] store "${store}" failed ${t.failures} times in a row (${describe(t.error)}); circuit open: store skipped for ${t.retryInMs} ms, failure modes apply.`,
        details,
      );
    } else if (t.to === 'half-open') {
      logger.warn(`[floodgate] store "${store}": circuit half-open, one request probes it.`, details);
    } else {
      logger.warn(`[floodgate] store "${store}" answered again; circuit closed, limiting resumed.`, details);
    }
  } catch {
    // A broken logger must not break requests.
  }
  if (!hook) return;
  try {
    const returned: unknown = hook(event);
    if (isThenable(returned)) Promise.resolve(returned).then(undefined, (error: unknown) => hookFailed(logger, error));
  } catch (error) {
    hookFailed(logger, error);
  }
}

function hookFailed(logger: Logger, error: unknown): void {
  try {
    logger.error(`[floodgate] onStoreError threw: ${describe(error)}`, { error: describe(error) });
  } catch {
    // nothing left to tell
  }
}

function describe(error: unknown): string | undefined {
  if (error === undefined) return undefined;
  if (error instanceof Error) return error.message;
  return String(error);
}
