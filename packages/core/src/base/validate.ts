// Option validators: one check and one message per kind of value, shared by every entry point that takes options.
import { FloodgateError, invalidOption } from './errors';
import type { Logger } from './logger';

/** The most units a limit, a burst or a cost can be. */
export const MAX_UNITS = 1_000_000_000;
/**
 * The most slots one request with an in-flight limit takes (a lease's cost), whatever the limit: a
 * lease is one store entry per slot (concurrency.lua), so one request's writes and Redis time grow
 * with it. 10,000 keeps a lease's write within a few ms of Redis time; a larger cost is refused
 * (`cost-exceeds-limit`), never sent as a script Redis would choke on (docs/concurrency.md#cost).
 */
export const MAX_LEASE_COST = 10_000;
/** The most instances (processes, pods) that can share a limit (`instances`, `hotKeys.instances`). */
export const MAX_INSTANCES = 10_000;

/** A whole number within [min, max], or FG_INVALID_OPTION naming the option. */
export function wholeNumber(option: string, value: unknown, min: number, max: number, orElse?: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    invalidOption(option, value, `a whole number from ${min} to ${max}${orElse ? `, ${orElse}` : ''}`);
  }
  return value;
}

/** true or false; `fallback` when undefined. */
export function bool(option: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') invalidOption(option, value, 'true or false');
  return value;
}

/** A function, or undefined. */
export function optionalFunction<F>(option: string, value: F | undefined, what = 'a function'): F | undefined {
  if (value !== undefined && typeof value !== 'function') invalidOption(option, value, what);
  return value;
}

/** One of `choices`; `fallback` when undefined. */
export function oneOf<T extends string>(option: string, value: unknown, choices: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  if (!choices.includes(value as T)) invalidOption(option, value, `one of ${choices.map((c) => `'${c}'`).join(', ')}`);
  return value as T;
}

/** A plain options object (not null, not an array); `{}` when undefined and `optional`. */
export function optionsObject<T extends object>(option: string, value: T | undefined, what: string): T {
  if (value === undefined) return {} as T;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) invalidOption(option, value, what);
  return value;
}

/**
 * A clock option (a limiter's, a store's, hot-key mode's, identity's, RedisStore's test clock): a
 * function, or undefined for the caller's default.
 */
export function clockOption(option: string, value: unknown): (() => number) | undefined {
  if (value !== undefined && typeof value !== 'function') invalidOption(option, value, 'a function returning the time in ms, never going back');
  return value as (() => number) | undefined;
}

/** A Logger (warn and error), console when undefined. */
export function loggerOption(option: string, value: unknown): Logger {
  if (value === undefined) return console;
  const logger = value as Logger | null;
  if (!logger || typeof logger.warn !== 'function' || typeof logger.error !== 'function') {
    invalidOption(option, value, 'an object with warn(message) and error(message) functions, such as console');
  }
  return logger;
}

/** True when `value` is a valid cost: a whole number from 0 to MAX_UNITS. The one definition of a cost. */
export function isCost(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= MAX_UNITS;
}

const COST_RANGE = `a whole number from 0 to ${MAX_UNITS}`;

/**
 * A static cost (an option): FG_INVALID_OPTION when it is not a cost, or when it is above
 * `maxCost`, the smallest limit, since such a request could never be admitted.
 */
export function staticCost(option: string, value: unknown, maxCost: number): number {
  if (!isCost(value)) invalidOption(option, value, `${COST_RANGE}, or a function of the request returning one`);
  if (value > maxCost) {
    const lease = maxCost === MAX_LEASE_COST ? `, and a request with an in-flight limit takes at most ${MAX_LEASE_COST} slots` : '';
    invalidOption(option, value, `at most the smallest limit or burst (${maxCost})${lease}: a larger cost could never be admitted`);
  }
  return value;
}

/** A cost given at request time (consume's `cost`, a cost function's answer): FG_INVALID_COST when it is not one. */
export function requestCost(value: unknown, source: string): number {
  if (!isCost(value)) {
    throw new FloodgateError('FG_INVALID_COST', `Invalid cost: ${source} ${String(value)}; expected ${COST_RANGE}.`);
  }
  return value;
}

/** A refund's `at` (the store-clock ms its consume was decided at, `Decision.at`): FG_INVALID_AT when it is not whole ms. */
export function refundAt(value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new FloodgateError('FG_INVALID_AT', `Invalid refund: at ${String(value)}; expected the \`at\` of the admitted decision (whole ms from 0).`);
  }
  return value;
}

/** A key prefix: `[A-Za-z0-9_.-]{1,32}`, so it needs no escaping in a key, a Redis glob or an ACL key pattern. */
export function keyPrefix(option: string, value: unknown): string {
  if (typeof value !== 'string' || !/^[A-Za-z0-9_.-]{1,32}$/.test(value)) invalidOption(option, value, 'a string matching [A-Za-z0-9_.-]{1,32}');
  return value;
}

const TOKEN = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;

/** A lease's id, as the stores take it (it becomes part of a ZSET member: no ':' ',' or '.'). */
export function leaseToken(value: unknown): string {
  if (typeof value !== 'string' || !TOKEN.test(value)) {
    throw new FloodgateError('FG_INVALID_OPTION', `Invalid lease token ${JSON.stringify(value)}: expected [A-Za-z][A-Za-z0-9_-]{0,63}.`);
  }
  return value;
}

/**
 * The names of an options type, checked by the compiler against the interface: a list that misses a
 * key, or names one the type lacks, does not compile. `optionNames<LimitOptions>()([...])`.
 */
export function optionNames<T>() {
  return <const K extends readonly (keyof T & string)[]>(
    names: K & ([Exclude<keyof T, K[number]>] extends [never] ? unknown : { missing: Exclude<keyof T, K[number]> }),
  ): readonly string[] => names;
}

/**
 * Names other rate limiters use (the peer libraries named in docs/migrating.md) and what
 * Floodgate calls the same thing: a user moving over gets the
 * Floodgate name, not a silently ignored option.
 */
const PEER_NAMES: Readonly<Record<string, string>> = {
  max: 'limit',
  points: 'limit',
  limiter: 'limit',
  windowMS: 'windowMs',
  windowms: 'windowMs',
  window: 'windowMs',
  timeWindow: 'windowMs',
  duration: 'windowMs',
  interval: 'windowMs',
  keyGenerator: 'key',
  keyGen: 'key',
  id: 'key',
  standardHeaders: 'headers',
  legacyHeaders: 'headers',
  draft_polli_ratelimit_headers: 'headers',
  enableDraftSpec: 'headers',
  addHeaders: 'headers',
  addHeadersOnExceeding: 'headers',
  disableHeader: 'headers',
  keyPrefix: 'prefix',
  nameSpace: 'prefix',
  namespace: 'prefix',
  storeClient: 'store',
  redis: 'store',
  db: 'store',
  driver: 'store',
  message: 'handler',
  errorResponseBuilder: 'handler',
  errorMessage: 'handler',
  onLimitReached: 'onLimited',
  onExceeded: 'onLimited',
  onExceeding: 'onDecision',
  failmode: 'failMode',
  skipOnError: 'failMode',
  insuranceLimiter: 'failMode',
  timeout: 'timeoutMs',
  allowlist: 'allowList',
  whitelist: 'allowList',
  skipList: 'allowList',
  skipFailedRequests: 'countOnly',
  skipSuccessfulRequests: 'countOnly',
  blockDuration: 'lockout',
  ban: 'lockout',
};

/** Peer options Floodgate has no direct equivalent for, and what to do instead. */
const PEER_HINTS: Readonly<Record<string, string>> = {
  skip: '`skip` is an option of the HTTP adapters (rateLimit), not of createLimiter',
  allowList: '`allowList` is an option of the HTTP adapters (rateLimit), not of createLimiter',
  statusCode: 'Floodgate answers 429 (limited) and 503 (failMode closed); change the body with `handler`',
  blockDuration: 'a caller refused again and again is locked out by `lockout: { after, baseMs, maxMs }`, an option of createLimiter and rateLimit',
  ban: 'a caller refused again and again is locked out by `lockout: { after, baseMs, maxMs }`, an option of createLimiter and rateLimit',
  execEvenly: 'use `algorithm: \'token-bucket\'` or `\'gcra\'` to spread requests evenly',
  continueExceeding: 'the window does not restart on each request',
};

/** Edit distance, for "did you mean" (option names, time-zone names). */
export function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0];
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j];
      row[j] = Math.min(row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length];
}

/** The known name an unknown one most likely meant, or undefined. */
function suggest(name: string, known: readonly string[]): string | undefined {
  const peer = PEER_NAMES[name];
  if (peer !== undefined && known.includes(peer)) return peer;
  const lower = name.toLowerCase();
  // 'failmode' -> 'failMode'; 'ttl', 'timeout' -> 'ttlMs', 'timeoutMs' (the unit left off).
  const close = known.find((k) => k.toLowerCase() === lower || k.toLowerCase() === `${lower}ms`);
  if (close) return close;
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const k of known) {
    // At most 2 edits count, and names that far apart in length are further: skip them, so a
    // 100 KB name from account data (a plan's options) costs no edit-distance work.
    if (Math.abs(k.length - lower.length) > 2) continue;
    const d = distance(lower, k.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [k, d];
  }
  // One edit in 4, at most 2: 'limt' -> 'limit', never 'key' -> 'cost'.
  return best !== undefined && bestDistance <= Math.min(2, Math.floor(name.length / 4)) ? best : undefined;
}

/**
 * Throws FG_UNKNOWN_OPTION when `options` has an own key that is not in `known`, naming it and the
 * option it most likely meant. `where` says which options these are ('rateLimit', 'RedisStore').
 * Keys whose value is undefined count too: a typo is a typo whatever its value.
 */
export function checkOptionNames(where: string, options: object, known: readonly string[]): void {
  for (const name of Object.keys(options)) {
    if (known.includes(name)) continue;
    const meant = suggest(name, known);
    const hint = meant !== undefined ? `did you mean \`${meant}\`?` : PEER_HINTS[name] !== undefined ? `${PEER_HINTS[name]}.` : undefined;
    const shown = name.length > 200 ? `${name.slice(0, 64)}... (${name.length} characters)` : name;
    throw new FloodgateError(
      'FG_UNKNOWN_OPTION',
      `Unknown option \`${shown}\` in ${where}${hint ? `: ${hint}` : '.'} Valid options: ${known.join(', ')}.`,
      name,
    );
  }
}
