// Everything a response says about rate limits, from whichever dialect it sent: pure, no state.
import { parseDraft10, parseDraft6, parseDraft7, parseXRateLimit, type Dialect, type QuotaObservation } from './dialects';
import { fieldLookup, type HeaderSource } from './header-source';
import { parseRetryAfter, serverDateMs } from './time-fields';

export interface RateLimitInfo {
  /** The dialect the quotas were read from; undefined when the response carried none. */
  readonly dialect?: Dialect;
  readonly quotas: readonly QuotaObservation[];
  /** Retry-After in ms from the response, when present and valid. */
  readonly retryAfterMs?: number;
}

export interface ParseOptions {
  /** The client's clock when the response arrived, in ms. Default Date.now(). */
  readonly nowMs?: number;
}

/**
 * Reads a response's rate-limit fields. When a response sends several dialects (Floodgate can send
 * draft-6 and draft-10 together), the richest is used and the others are ignored, since they
 * describe the same limits: draft-10 (named policies, every limit), then draft-7's dictionary, then
 * draft-6's fields, then X-RateLimit-*.
 */
export function parseRateLimit(headers: HeaderSource, options: ParseOptions = {}): RateLimitInfo {
  const get = fieldLookup(headers);
  const nowMs = options.nowMs ?? Date.now();
  const dateMs = serverDateMs(get('date'));
  const clock = { nowMs, dateMs };
  const retryAfterMs = parseRetryAfter(get('retry-after'), nowMs, dateMs);
  const parsers: [Dialect, typeof parseDraft10][] = [
    ['draft-7', parseDraft7],
    ['draft-10', parseDraft10],
    ['draft-6', parseDraft6],
    ['x-ratelimit', parseXRateLimit],
  ];
  for (const [dialect, parse] of parsers) {
    // draft-7 first: its dictionary never parses as draft-10's list of named items, while a draft-10
    // list of Token names would parse as a dictionary; parseDraft7 only accepts limit/remaining/reset.
    const quotas = parse(get, clock);
    if (quotas) return retryAfterMs === undefined ? { dialect, quotas } : { dialect, quotas, retryAfterMs };
  }
  return retryAfterMs === undefined ? { quotas: [] } : { quotas: [], retryAfterMs };
}

export type { Dialect, QuotaObservation, QuotaUnit } from './dialects';
export { parseDraft10, parseDraft7, parseDraft6, parseXRateLimit } from './dialects';
export { fieldLookup, type HeaderSource, type FieldLookup } from './header-source';
export { parseRetryAfter, resetToMs, serverDateMs, EPOCH_SECONDS_FROM, EPOCH_MS_FROM, type ResetConvention } from './time-fields';
export { parseProblemDetails, isProblemJson, PROBLEM_TYPES, type ProblemInfo } from './problem';
