// Reset and Retry-After values to milliseconds from now: delta seconds, Unix seconds, Unix milliseconds, HTTP dates.

/** How a reset value was read. */
export type ResetConvention = 'delta-seconds' | 'epoch-seconds' | 'epoch-ms';

/**
 * Below this a reset is delta seconds, at or above it a Unix time in seconds: 10^9 s is 31.7 years,
 * longer than any rate-limit window anyone sends, and every Unix time since September 2001 is larger.
 */
export const EPOCH_SECONDS_FROM = 1e9;
/** At or above this a reset is a Unix time in milliseconds (10^12 s would be the year 33658). */
export const EPOCH_MS_FROM = 1e12;

/** A non-negative finite number from a field's text (an SF Integer or Decimal, or a plain number), else undefined. */
export function nonNegativeNumber(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const trimmed = text.trim();
  if (!/^\d+(\.\d+)?$/.test(trimmed)) return undefined;
  const n = Number(trimmed);
  return Number.isFinite(n) ? n : undefined;
}

/** The response's Date field in ms, when present and valid: the server's clock, for absolute times. */
export function serverDateMs(date: string | undefined): number | undefined {
  if (date === undefined) return undefined;
  const ms = Date.parse(date);
  return Number.isFinite(ms) ? ms : undefined;
}

/**
 * Ms from the response until the reset a value names, never negative, and the convention it was read in.
 *
 * The rule: a value below 10^9 is delta seconds; from 10^9 it is a Unix time in seconds; from 10^12 a
 * Unix time in milliseconds. An absolute time is read against the response's Date field when the
 * client's clock is off it (the server's own clock, so a client whose clock is off still waits the
 * right time: the difference of two times on one clock; Date is whole seconds, rounded down, so that
 * difference may be up to a second long: never short), and against the client's clock when that
 * lies within the second Date names (referenceMs).
 *
 * A whole number of Unix seconds names a second, not a moment: servers round the moment up
 * (express-rate-limit, Floodgate) or down (koa-ratelimit), and the client cannot tell which, so it
 * takes the end of that second. Never early; up to a second late when the server rounded up.
 */
export function resetToMs(value: number, nowMs: number, dateMs?: number): { ms: number; convention: ResetConvention } {
  if (value < EPOCH_SECONDS_FROM) return { ms: Math.max(0, value * 1000), convention: 'delta-seconds' };
  const atMs = value < EPOCH_MS_FROM ? (Number.isInteger(value) ? value + 1 : value) * 1000 : value;
  return { ms: Math.max(0, atMs - referenceMs(nowMs, dateMs)), convention: value < EPOCH_MS_FROM ? 'epoch-seconds' : 'epoch-ms' };
}

/**
 * The moment an absolute time is measured from: the client's clock when it lies within the second
 * the response's Date names (the two clocks agree as far as Date can tell, and the client's has
 * milliseconds: up to a second less to wait per reset, issue #46), else Date (the server's clock,
 * whole seconds: never early, whatever the client's clock says), else the client's.
 */
function referenceMs(nowMs: number, dateMs: number | undefined): number {
  if (dateMs === undefined) return nowMs;
  return nowMs >= dateMs && nowMs < dateMs + 1000 ? nowMs : dateMs;
}

/**
 * Retry-After (RFC 9110 s10.2.3) in ms from the response: delay-seconds, or an HTTP-date read against
 * the response's Date field when present, else the client's clock. A date in the past is 0; anything
 * else (negative, empty, unparsable) is undefined and ignored, as the draft says of malformed fields.
 */
export function parseRetryAfter(value: string | undefined, nowMs: number, dateMs?: number): number | undefined {
  if (value === undefined) return undefined;
  const seconds = nonNegativeNumber(value);
  if (seconds !== undefined) return seconds * 1000;
  const trimmed = value.trim();
  // An HTTP-date has a letter (the day and month names); a bare signed number must not pass Date.parse.
  if (!/[a-z]/i.test(trimmed)) return undefined;
  const at = Date.parse(trimmed);
  if (!Number.isFinite(at)) return undefined;
  return Math.max(0, at - (dateMs ?? nowMs));
}
