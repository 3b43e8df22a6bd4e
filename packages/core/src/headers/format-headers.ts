// Rate-limit response headers: one function per dialect, plus Retry-After with jitter. Pure formatting.
import type { Decision } from '../model/decision';

/** 'draft-6': RateLimit-Limit/-Remaining/-Reset. 'draft-10': RateLimit-Policy + RateLimit. 'legacy': X-RateLimit-*. */
export const HEADER_DIALECTS = ['draft-6', 'draft-10', 'legacy'] as const;
export type HeaderDialect = (typeof HEADER_DIALECTS)[number];
/** One response header: [name, value]. */
export type HeaderPair = [name: string, value: string];

export interface FormatHeadersOptions {
  /** Add Retry-After to a denied decision (never to -1, "can never be admitted"). Default true. */
  retryAfter?: boolean;
  /** Up to this many ms of random delay added to Retry-After before it is rounded up. Default 0. */
  retryAfterJitterMs?: number;
  /** Uniform in [0, 1). Default Math.random. */
  random?: () => number;
  /** Wall clock in ms, for the legacy dialect's epoch-seconds reset. Default Date.now. */
  now?: () => number;
}

interface Quota {
  readonly allowed: boolean;
  readonly resetMs: number;
  readonly retryAfterMs: number;
}

/** The largest Integer a structured field may carry (RFC 9651 s3.3.1: at most 15 digits). */
const SF_INTEGER_MAX = 999_999_999_999_999;
const seconds = (ms: number): number => Math.min(SF_INTEGER_MAX, Math.max(0, Math.ceil(ms / 1000)));
/** Ms rounded up to a whole ms and capped like an SF Integer (so within any real window, ceil(wholeMs / 1000) is the seconds sent). */
const wholeMs = (ms: number): number => Math.min(SF_INTEGER_MAX, Math.max(0, Math.ceil(ms)));
const count = (n: number): string => String(Math.min(SF_INTEGER_MAX, Math.max(0, Math.floor(n))));

/**
 * Ms until this limit gives back quota the caller can use. On a denial that is the retry time, not
 * the full reset: a sliding window restores fully only after up to two windows, and Retry-After
 * must never point earlier than the reset it is sent with (draft-ietf-httpapi-ratelimit-headers-10 s6).
 */
function untilMs(q: Quota): number {
  return !q.allowed && q.retryAfterMs > 0 ? q.retryAfterMs : q.resetMs;
}

/**
 * draft-10's `t` in whole milliseconds, a vendor parameter on each RateLimit item (the draft: "Other
 * parameters are allowed", implementation-specific ones "SHOULD be prefixed with a vendor
 * identifier"; a parser that does not know it ignores it). `t` is whole seconds rounded up, up to a
 * second late: against a sliding window whose next unit is 200 ms away, a pacer that waits a whole
 * second sleeps through units that expire unused at the window's end (issue #46).
 * @floodgate/client reads it when it agrees with `t`.
 */
export const T_MS_PARAM = 'floodgate-t-ms';

/**
 * The same for the integer dialects (draft-6, legacy), whose fields take no parameters (a
 * plain-integer parser of `RateLimit-Reset: 1;x=2` reads NaN): a field of its own beside them, the
 * reset of the limit they describe in whole ms from the response. Sent once whichever of the two
 * are configured; unknown fields are ignored by every other client.
 */
export const RESET_MS_FIELD = 'Floodgate-Reset-Ms';

/** SF String (RFC 9651 s3.3.3): policy names are [A-Za-z0-9_.-], escaping is for safety only. */
function sfString(value: string): string {
  return `"${value.replace(/[^\x20-\x7e]/g, '').replace(/["\\]/g, '\\$&')}"`;
}

/**
 * The last header pair of one name, reused while the number it carries stays the same (a route's
 * limit rarely changes between responses; a blocked caller's remaining 0, reset and Retry-After
 * seconds repeat for a second): one string and one pair fewer per response. `format` is applied to
 * the number once per new value. Pairs are never mutated by their readers (HttpResult.headers is
 * read-only).
 */
class LastPair {
  private value = NaN;
  private pair: HeaderPair | undefined;
  constructor(
    private readonly name: string,
    private readonly format: (n: number) => string,
  ) {}
  of(value: number): HeaderPair {
    if (value !== this.value || this.pair === undefined) {
      this.value = value;
      this.pair = [this.name, this.format(value)];
    }
    return this.pair;
  }
}
const DRAFT6_LIMIT = new LastPair('RateLimit-Limit', count);
const DRAFT6_REMAINING = new LastPair('RateLimit-Remaining', count);
const DRAFT6_RESET = new LastPair('RateLimit-Reset', String);
const LEGACY_LIMIT = new LastPair('X-RateLimit-Limit', count);
const RESET_MS = new LastPair(RESET_MS_FIELD, String);
const RETRY_AFTER = new LastPair('Retry-After', String);

function draft6(d: Decision, out: HeaderPair[]): void {
  out.push(DRAFT6_LIMIT.of(d.limit!), DRAFT6_REMAINING.of(d.remaining!), DRAFT6_RESET.of(seconds(untilMs(d as Quota))));
}

/**
 * Every policy: `"name";q=100;w=60` and `"name";r=50;t=30`; w only when the window is whole seconds.
 * Options keep every window within 365 days; the integers are capped at 15 digits all the same, so a
 * decision from a custom store can never make a header that structured-field parsers reject.
 */
function draft10(d: Decision, out: HeaderPair[]): void {
  const policy = d.limits.map((l) => {
    // An in-flight limit has no window: its quota unit says what q counts (draft-10 s2.1, `qu`).
    if (l.quotaUnit === 'concurrent-requests') return `${sfString(l.policy)};q=${count(l.limit)};qu="concurrent-requests"`;
    const w = l.windowMs % 1000 === 0 && l.windowMs > 0 ? `;w=${seconds(l.windowMs)}` : '';
    return `${sfString(l.policy)};q=${count(l.limit)}${w}`;
  });
  const current = d.limits.map((l) => {
    const until = untilMs(l);
    return `${sfString(l.policy)};r=${count(l.remaining)};t=${seconds(until)};${T_MS_PARAM}=${wholeMs(until)}`;
  });
  out.push(['RateLimit-Policy', policy.join(', ')], ['RateLimit', current.join(', ')]);
}

/** As GitHub and the common Node limiters send them: X-RateLimit-Reset is a Unix time in seconds. */
function legacy(d: Decision, out: HeaderPair[], options: FormatHeadersOptions): void {
  const now = (options.now ?? Date.now)();
  out.push(
    LEGACY_LIMIT.of(d.limit!),
    ['X-RateLimit-Remaining', count(d.remaining!)],
    ['X-RateLimit-Reset', String(Math.ceil((now + untilMs(d as Quota)) / 1000))],
  );
}

/** Each dialect's function, by name: a dialect added to HEADER_DIALECTS without one does not compile. */
const DIALECTS: Readonly<Record<HeaderDialect, (d: Decision, out: HeaderPair[], options: FormatHeadersOptions) => void>> = {
  'draft-6': draft6,
  'draft-10': draft10,
  legacy,
};

type DialectWriter = (d: Decision, out: HeaderPair[], options: FormatHeadersOptions) => void;

/** A dialect list's functions, and whether one of them is an integer dialect (draft-6, legacy). */
interface Writers extends Array<DialectWriter> {
  integer: boolean;
}

/**
 * The last dialect list's functions, resolved by name once per list instead of once per response
 * (a limiter passes the same list, parsed once, to every response it formats). The names are
 * compared too: a caller's own list may have changed since.
 */
let lastNames: HeaderDialect[] = [];
let lastWriters: Writers | undefined;
function writersOf(dialects: readonly HeaderDialect[]): Writers {
  if (lastWriters !== undefined && dialects.length === lastNames.length) {
    let same = true;
    for (let i = 0; i < dialects.length && same; i++) same = dialects[i] === lastNames[i];
    if (same) return lastWriters;
  }
  const writers = dialects.map((d) => DIALECTS[d]) as Writers;
  writers.integer = dialects.some((d) => d !== 'draft-10');
  lastNames = [...dialects];
  lastWriters = writers;
  return writers;
}

/**
 * Whole seconds to send in Retry-After: jitter in [0, jitterMs] is added before rounding up, so the
 * value lies in [ceil(retryAfterMs / 1000), ceil((retryAfterMs + jitterMs) / 1000)] and is never
 * earlier than the moment the request would be admitted. At least 1.
 */
export function retryAfterSeconds(retryAfterMs: number, jitterMs = 0, random: () => number = Math.random): number {
  const jitter = jitterMs > 0 ? Math.floor(random() * (jitterMs + 1)) : 0;
  return Math.max(1, Math.ceil((Math.max(0, retryAfterMs) + Math.min(jitter, jitterMs)) / 1000));
}

/**
 * The headers for one decision in the given dialects. Degraded decisions (the shared store did not
 * decide) carry no quota headers: a made-up quota is worse than none.
 */
export function formatHeaders(
  decision: Decision,
  dialects: readonly HeaderDialect[],
  options: FormatHeadersOptions = {},
): HeaderPair[] {
  const out: HeaderPair[] = [];
  if (!decision.degraded && decision.limit !== null && decision.limits.length > 0) {
    const writers = writersOf(dialects);
    for (let i = 0; i < writers.length; i++) writers[i](decision, out, options);
    if (writers.integer) out.push(RESET_MS.of(wholeMs(untilMs(decision as Quota))));
  }
  if (options.retryAfter !== false && !decision.allowed && decision.retryAfterMs >= 0) {
    out.push(RETRY_AFTER.of(retryAfterSeconds(decision.retryAfterMs, options.retryAfterJitterMs, options.random)));
  }
  return out;
}
