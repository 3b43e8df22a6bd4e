// Floodgate's warnings: every name in one list, the `warnings` option that switches them off by name, and the write-once rule.
import { invalidOption } from './errors';
import type { Logger } from './logger';

/**
 * Every warning Floodgate writes, by name. Each is legal but likely a mistake, and is written once
 * through the limiter's `logger`; `warnings: { NAME: false }` switches one off (docs/errors.md#warnings).
 */
export const WARNING_CODES = [
  /** A request without a client IP reached the limiter (it is limited in the shared 'ip:unknown' bucket). */
  'FG_IP_MISSING',
  /** The framework reported something that is not an IP address (same fallback). */
  'FG_IP_MALFORMED',
  /** An API key longer than `maxApiKeyLength` (treated as an unknown key, without a lookup). */
  'FG_API_KEY_TOO_LONG',
  /** `resolveKey` threw, rejected, returned a bad value or timed out. */
  'FG_RESOLVE_KEY_FAILED',
  /** `resolveKey` returned `limits` the limiter rejects (the key gets the route's limits). */
  'FG_RESOLVE_KEY_BAD_PLAN',
  /** A request carried X-Forwarded-For, Forwarded or X-Real-IP while the framework trusts no proxy. */
  'FG_PROXY_HEADER_UNTRUSTED',
  /** The framework trusts every proxy: the client IP is whatever the client writes first in X-Forwarded-For. */
  'FG_TRUST_PROXY_ALL',
  /** A number `windowMs` that reads as seconds (60, 900, 3600): it is milliseconds. */
  'FG_WINDOW_IN_SECONDS',
  /** One request counted by two limiters (two app-level `rateLimit()`s, or two plugin registrations). */
  'FG_COUNTED_TWICE',
  /** A route mounts a `rateLimit()` of its own beside an app-level one: its own store and limits, and the app's skip it. */
  'FG_ROUTE_OWN_LIMITER',
  /** A route that no limiter counts although the app has one (Fastify: declared before the plugin loaded). */
  'FG_ROUTE_NOT_LIMITED',
  /** A request held its in-flight slot for `concurrency.maxHoldMs` (a hung handler?): its lease is no longer renewed. */
  'FG_LEASE_MAX_HOLD',
  /** Another app's limiters, configured otherwise, use the same prefix on the same Redis: shared buckets and instance counts. */
  'FG_PREFIX_SHARED',
  /** A limit function threw, rejected or returned a bad value: the request was refused (503). Once per cause. */
  'FG_LIMIT_FUNCTION_FAILED',
  /** A limit function (or an override) gave a value above `limitCeiling`: the ceiling was used. */
  'FG_LIMIT_CAPPED',
  /** Limit functions returned `limitValuesMax` distinct values on one limiter: new ones are no longer kept. */
  'FG_LIMIT_VALUES_CEILING',
] as const;

export type WarningCode = (typeof WARNING_CODES)[number];

/** `warnings: { FG_IP_MISSING: false }`: the warnings to leave unwritten. Default: all on. */
export type WarningSwitches = Partial<Record<WarningCode, boolean>>;

/** Parses `warnings` where it enters: the names switched on. Unknown names and non-booleans are errors. */
export function resolveWarnings(value: unknown, option = 'warnings'): ReadonlySet<WarningCode> {
  if (value === undefined) return ALL_ON;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) invalidOption(option, value, 'an object such as { FG_IP_MISSING: false }');
  for (const [name, on] of Object.entries(value)) {
    if (!WARNING_CODES.includes(name as WarningCode)) invalidOption(`${option}.${name}`, on, `one of ${WARNING_CODES.join(', ')}`);
    if (typeof on !== 'boolean') invalidOption(`${option}.${name}`, on, 'true or false');
  }
  const switches = value as WarningSwitches;
  return new Set(WARNING_CODES.filter((code) => switches[code] !== false));
}

const ALL_ON: ReadonlySet<WarningCode> = new Set(WARNING_CODES);

// Written once per logger and name: an app's limiters and routes share their logger (console by
// default), so a mistake made once in the app's setup is one line, not one per route.
const written = new WeakMap<object, Set<string>>();

/**
 * Writes `[floodgate] CODE: message (...)` once per logger and code (and `once`, when a warning may
 * name different things), unless the code is switched off. A throwing logger never breaks a request.
 * Returns whether it wrote.
 */
export function warnOnce(
  logger: Pick<Logger, 'warn'>,
  on: ReadonlySet<WarningCode>,
  code: WarningCode,
  message: string,
  once: string = code,
): boolean {
  if (!on.has(code)) return false;
  let seen = written.get(logger);
  if (seen === undefined) written.set(logger, (seen = new Set()));
  if (seen.has(once)) return false;
  seen.add(once);
  try {
    logger.warn(`[floodgate] ${code}: ${message}. Written once; switch it off with warnings: { ${code}: false }.`);
  } catch {
    // A broken logger must not break requests.
  }
  return true;
}

/**
 * The number `windowMs` values that read as seconds: below 1000 (`60`, `900`), or up to a day a
 * multiple of ten minutes in seconds that is no whole number of seconds in ms (`1800`, `3600`,
 * `86400`; not `1500` or `5000`). A duration string ('60ms') is deliberate and never warns.
 */
export function looksLikeSeconds(windowMs: unknown): windowMs is number {
  if (typeof windowMs !== 'number' || !Number.isFinite(windowMs) || windowMs <= 0) return false;
  return windowMs < 1000 || (windowMs % 600 === 0 && windowMs % 1000 !== 0 && windowMs <= 86_400);
}

/** FG_WINDOW_IN_SECONDS for each number window given (top-level and per limit). */
export function warnSecondsWindows(
  options: { windowMs?: unknown; limits?: readonly { windowMs?: unknown }[] },
  logger: Pick<Logger, 'warn'>,
  on: ReadonlySet<WarningCode>,
): void {
  if (!on.has('FG_WINDOW_IN_SECONDS')) return;
  const given = [options.windowMs, ...(Array.isArray(options.limits) ? options.limits.map((l) => l?.windowMs) : [])];
  for (const value of given) {
    if (!looksLikeSeconds(value)) continue;
    warnOnce(
      logger,
      on,
      'FG_WINDOW_IN_SECONDS',
      `windowMs: ${value} is ${value} milliseconds. If you meant ${value} seconds, write windowMs: '${value}s' (or ${value * 1000}); if you meant milliseconds, write '${value}ms' (docs/errors.md#fg-window-in-seconds)`,
      `FG_WINDOW_IN_SECONDS ${value}`,
    );
  }
}
