// Limiter options: parsed once, in one place, into a resolved form; the caller's object is never mutated.
import { ALGORITHM, ALGORITHMS, isRateAlgorithm, type AlgorithmName } from '../algorithms/registry';
import { MAX_WINDOW_MS, parseDuration, type Duration } from '../base/duration';
import { invalidOption } from '../base/errors';
import { FAILURE_OPTION_NAMES, resolveFailureOptions, type FailureOptions, type ResolvedFailureOptions } from '../failure/policy';
import { resolveLimiterHotKeys, type HotKeyOptions, type ResolvedHotKeyOptions } from '../hot-keys/hot-key-store';
import { resolveLockout, type LockoutOptions, type ResolvedLockout } from '../model/lockout';
import { resolveConcurrency, type ConcurrencyOptions, type ResolvedConcurrency } from '../model/concurrency';
import { resolveSettle, type ResolvedSettle, type SettleOptions } from '../model/settle';
import type { ResolvedLimit } from '../model/limit';
import { resolveCalendarWindow, type CalendarWindowOptions } from '../calendar/calendar-window';
import { storeOption, type Store } from '../stores/store';
import type { MeterProvider } from '@opentelemetry/api';
import { MemoryStore } from '../stores/memory-store';
import { bool, checkOptionNames, clockOption, keyPrefix, MAX_LEASE_COST, MAX_UNITS, optionalFunction, optionNames, wholeNumber } from '../base/validate';
import { resolveWarnings, warnSecondsWindows, type WarningCode, type WarningSwitches } from '../base/warnings';
import type { OverrideEvent } from './overrides';
import { DEFAULT_LIMIT_VALUES_MAX, DYNAMIC_FIELDS, hasFunctions, type AnsweredLimit, type LimitContext, type PerRequest } from './dynamic-limits';

export type { LimitContext, PerRequest } from './dynamic-limits';

export type { ResolvedLimit } from '../model/limit';

/** One limit. Window algorithms use `limit` per `windowMs`; token-bucket and gcra use `burst` and `refillPerSecond`. */
export interface LimitOptions {
  /** Policy name, shown in draft-10 headers and part of the key. `[A-Za-z0-9_.-]{1,64}`. Default 'default' (or 'limit-N' in `limits`). */
  name?: string;
  /** Default 'sliding-window-counter'. */
  algorithm?: AlgorithmName;
  /**
   * Units admitted per window (window algorithms); the default burst for token-bucket and gcra. A
   * number, or a function of the subject and the consume's context (sync or async) called for each
   * request after the block cache (docs/runtime-limits.md).
   */
  limit?: PerRequest<number>;
  /** The window, in ms or as a duration string ('1m'), or a function returning one. Default 60_000. */
  windowMs?: PerRequest<Duration>;
  /**
   * A window that follows the calendar instead of a fixed length: `{ every: 'month', timeZone:
   * 'America/New_York' }`, or from a billing date, `{ every: 'month', timeZone, anchor:
   * '2026-01-17T09:00' }` (docs/quotas.md). A fixed window: with it, `algorithm` is 'fixed-window'
   * (the default then) and `windowMs` is not set. Default: none (the window is `windowMs`).
   */
  window?: CalendarWindowOptions;
  /** token-bucket and gcra: the most units admitted at once (or a function returning it). Default `limit`. */
  burst?: PerRequest<number>;
  /** token-bucket and gcra: units restored per second (or a function returning it). Default `limit / windowSeconds`. */
  refillPerSecond?: PerRequest<number>;
}

/** A `limits` function: the list of limits for one request (numbers only in its answer). */
export type LimitsFunction = (subject: string, context: LimitContext) => AnsweredLimit[] | PromiseLike<AnsweredLimit[]>;

export interface LimiterOptions extends LimitOptions, FailureOptions {
  /** Where counts live. Default: a new MemoryStore (per process). */
  store?: Store;
  /** Key prefix. `[A-Za-z0-9_.-]{1,32}`. Default 'fg'. */
  prefix?: string;
  /**
   * Several limits on one subject, checked all-or-nothing in one atomic step (e.g. burst + sustained);
   * or a function of the subject and context returning them, per request (docs/runtime-limits.md).
   */
  limits?: LimitOptions[] | LimitsFunction;
  /**
   * The most a limit or burst may be, whatever a limit function answers or an override sets: larger
   * answers are capped to it (FG_LIMIT_CAPPED, once). A static limit above it is an error. Default: none.
   */
  limitCeiling?: number;
  /**
   * Limit functions: the most distinct answers one limiter keeps resolved. Past it (FG_LIMIT_VALUES_CEILING,
   * once) a new answer is resolved for its request and not kept: memory stays bounded. Default 1000.
   */
  limitValuesMax?: number;
  /**
   * Read each subject's override in the decision's own store call (one GET more in the same script):
   * `limiter.override(subject, limits, { ttlMs })` then changes the next decision on every instance,
   * and expires by itself (docs/runtime-limits.md#overrides). `{ pollMs }`: how often each instance
   * reads the broad overrides (`overrideAll`: a route, or everything), the bound on how late it
   * applies one (default 1000). Default false.
   */
  overrides?: boolean | { pollMs?: number };
  /** Told of every override set or cleared through this limiter, for an audit log. Default: none. */
  onOverride?: (event: OverrideEvent) => void;
  /**
   * Progressive lock-out, decided in the store: from the `after`-th refused consume of a subject on,
   * it is locked out for baseMs x 2^(strikes - after), capped at maxMs (reason 'locked'). `{}` takes
   * the defaults `{ after: 3, baseMs: '1m', maxMs: '1h', forgetMs: '1d' }`. Default: off.
   */
  lockout?: LockoutOptions;
  /**
   * An in-flight limit per subject, decided with the rate limits in the same atomic step: an
   * admitted request holds a lease (`Decision.lease`) until it is released (the HTTP adapters
   * release it when the response finishes or the connection closes) or expires. Default: off.
   */
  concurrency?: ConcurrencyOptions;
  /**
   * Reserve, then settle (docs/quotas.md#reserve-then-settle): the bounds on settling a reserved
   * cost with the actual one (`maxCost`, default the smallest limit; `withinMs`, default '15m').
   * Setting it (`{}` for the defaults) also makes the HTTP adapters offer `settle` on each admitted
   * request. `limiter.reserve` works without it, under the defaults.
   */
  settle?: SettleOptions;
}

/** Everything `createLimiter` takes. */
export interface CreateLimiterOptions extends LimiterOptions {
  /**
   * Remember denied subjects locally until their retry time, answering them without a store call.
   * Bounded to this many subjects; 0 turns it off. Default 10_000.
   */
  blockCacheSize?: number;
  /** Monotonic clock in ms for local caches and the circuit breaker (not for decisions: the store keeps time). Default performance.now. */
  clock?: () => number;
  /** Hot-key mode: subjects above `threshold` req/s are served from quota leased in blocks (docs/scaling.md). Default off. */
  hotKeys?: HotKeyOptions;
  /**
   * Where Floodgate's OpenTelemetry metrics go (docs/operations.md). Default: the global provider
   * when the limiter is built (`metrics.getMeterProvider()`), a no-op until the app registers an SDK:
   * register it before building limiters.
   */
  meterProvider?: MeterProvider;
  /**
   * Switch single warnings off by name, e.g. `{ FG_WINDOW_IN_SECONDS: false }`; each is written
   * once through `logger` (docs/errors.md#warnings). Default: all on.
   */
  warnings?: WarningSwitches;
}

export interface ResolvedLimiterOptions {
  readonly store: Store;
  readonly prefix: string;
  readonly limits: readonly ResolvedLimit[];
  /** The smallest limit: no request of a larger cost can ever be admitted. */
  readonly maxCost: number;
  /** What happens when the store fails: failure mode, deadline, breaker, reporting. */
  readonly failure: ResolvedFailureOptions;
  /** Subjects the block cache remembers; 0: off. */
  readonly blockCacheSize: number;
  /** Monotonic ms for local caches and the breaker; undefined: the shared default clock. */
  readonly clock: (() => number) | undefined;
  /** Hot-key options (checked by the hot-key store when the limiter is built); undefined: off. */
  readonly hotKeys: ResolvedHotKeyOptions | undefined;
  /** Progressive lock-out; undefined: off. */
  readonly lockout: ResolvedLockout | undefined;
  /** The in-flight limit, a limit of the lease kind the limiter adds to `limits` (plans' included); undefined: off. */
  readonly concurrency: ResolvedConcurrency | undefined;
  /** Reserve, then settle: its bounds, and whether the app turned it on. */
  readonly settle: ResolvedSettle;
  /** Where metrics go; undefined: the global provider. */
  readonly meterProvider: MeterProvider | undefined;
  /** The warnings switched on. */
  readonly warnings: ReadonlySet<WarningCode>;
  /**
   * Built at a request, by traffic (an API key's plan): not part of the app's configuration that
   * instances compare for FG_PREFIX_SHARED, since two instances of one app see different plans.
   * Undefined (false) for a limiter the app builds.
   */
  readonly madeForRequest?: boolean;
  /** `limitCeiling`; undefined: none. */
  readonly limitCeiling: number | undefined;
  /** Whether decisions read the subject's override (and the broad ones, polled). */
  readonly overrides: boolean;
  /** How often the broad overrides are read, in ms. */
  readonly overridesPollMs: number;
  readonly onOverride: ((event: OverrideEvent) => void) | undefined;
  /**
   * Limit functions, kept to be called per request (engine/limit-values.ts); undefined when every
   * limit is a number. `limits` then holds placeholders (functions answered with the ceiling, or 1000).
   */
  readonly dynamic?: DynamicLimits;
}

/** What the limiter calls per request when some limit is a function. */
export interface DynamicLimits {
  /** Each limit's options with their functions (top-level `windowMs`/`refillPerSecond` functions copied in), or the `limits` function. */
  readonly limits: readonly LimitOptions[] | LimitsFunction | undefined;
  /** The single top-level limit's options, when `limits` is not given. */
  readonly single: LimitOptions | undefined;
  /** Top-level defaults for a `limits` function's answers. */
  readonly defaults: LimitOptions;
  readonly ceiling: number | undefined;
  readonly valuesMax: number;
  /** A window is decided per request: it becomes part of the keys. */
  readonly windowFunction: boolean;
}

/** The names of one limit's options. */
export const LIMIT_OPTION_NAMES = optionNames<LimitOptions>()(['name', 'algorithm', 'limit', 'windowMs', 'window', 'burst', 'refillPerSecond']);

/** The names of every option `createLimiter` takes. */
export const LIMITER_OPTION_NAMES = optionNames<CreateLimiterOptions>()([
  ...(LIMIT_OPTION_NAMES as readonly (keyof LimitOptions)[]),
  ...(FAILURE_OPTION_NAMES as readonly (keyof FailureOptions)[]),
  'store',
  'prefix',
  'limits',
  'lockout',
  'concurrency',
  'settle',
  'limitCeiling',
  'limitValuesMax',
  'overrides',
  'onOverride',
  'blockCacheSize',
  'clock',
  'hotKeys',
  'meterProvider',
  'warnings',
]);

const NAME = /^[A-Za-z0-9_.-]{1,64}$/;

const units = (option: string, value: unknown) => wholeNumber(option, value, 1, MAX_UNITS);

export function resolveLimit(raw: LimitOptions, defaults: LimitOptions, option: string, defaultName: string): ResolvedLimit {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) invalidOption(option, raw, 'an object');
  if (option !== 'options') checkOptionNames(option, raw, LIMIT_OPTION_NAMES);
  const get = <K extends keyof LimitOptions>(k: K) => (raw[k] !== undefined ? raw[k] : defaults[k]);
  // A limit's own windowMs or window wins over a default of the other kind.
  if (raw.window !== undefined && raw.windowMs !== undefined) {
    invalidOption(`${option}.windowMs`, raw.windowMs, `no \`windowMs\` with \`window\` (a calendar window's periods have their own lengths)`);
  }
  // A calendar window is a fixed window, the default algorithm with one; a default `window` (top
  // level, with `limits`) applies to the limits that set no windowMs and no other algorithm.
  const algorithm =
    raw.algorithm ?? (raw.window !== undefined ? 'fixed-window' : defaults.algorithm ?? (defaults.window !== undefined && raw.windowMs === undefined ? 'fixed-window' : 'sliding-window-counter'));
  if (!ALGORITHMS.includes(algorithm)) invalidOption(`${option}.algorithm`, algorithm, `one of ${ALGORITHMS.join(', ')}`);
  const calendarRaw = raw.window ?? (raw.windowMs === undefined && algorithm === 'fixed-window' ? defaults.window : undefined);
  if (calendarRaw !== undefined && algorithm !== 'fixed-window') {
    invalidOption(`${option}.algorithm`, algorithm, "'fixed-window' (or no `algorithm`) with a calendar `window`: a quota per calendar period is a fixed window");
  }
  const name = raw.name ?? defaultName;
  if (typeof name !== 'string' || !NAME.test(name)) invalidOption(`${option}.name`, name, 'a string matching [A-Za-z0-9_.-]{1,64}');
  const calendar = calendarRaw === undefined ? undefined : resolveCalendarWindow(`${option}.window`, calendarRaw);
  const windowMs = calendar ? calendar.longestMs : parseDuration(`${option}.windowMs`, get('windowMs') ?? 60_000);
  const keySuffix = `${name}.${ALGORITHM[algorithm].keySuffix}`;

  if (isRateAlgorithm(algorithm)) {
    const limitRaw = get('limit');
    const burstRaw = get('burst') ?? limitRaw;
    if (burstRaw === undefined) invalidOption(`${option}.burst`, undefined, 'a whole number from 1 (or set `limit`)');
    const burst = units(raw.burst !== undefined || defaults.burst !== undefined ? `${option}.burst` : `${option}.limit`, burstRaw);
    const perWindow = limitRaw !== undefined ? units(`${option}.limit`, limitRaw) : burst;
    const rate = get('refillPerSecond') ?? perWindow / (windowMs / 1000);
    if (typeof rate !== 'number' || !Number.isFinite(rate) || rate <= 0 || rate > 1_000_000) {
      invalidOption(`${option}.refillPerSecond`, rate, 'a number above 0 and at most 1000000');
    }
    // The time to refill the whole burst bounds every TTL, reset, Retry-After and draft-10 `w=` of
    // this limit: past 365 days (the longest windowMs) PEXPIRE would overflow at extreme rates.
    if (burst * 1000 > rate * MAX_WINDOW_MS) {
      invalidOption(`${option}.refillPerSecond`, rate, `a number from ${burst * 1000 / MAX_WINDOW_MS} (a burst of ${burst} refilled within 365 days) to 1000000`);
    }
    // gcra needs no bound of its own: its TAT is kept relative to now (gcra.lua), within the 365 days above.
    return {
      name,
      algorithm,
      limit: burst,
      windowMs: Math.ceil((burst * 1000) / rate),
      store: { algorithm, capacity: burst, refillPerSecond: rate },
      keySuffix,
    };
  }
  if (raw.burst !== undefined || raw.refillPerSecond !== undefined) {
    const given = raw.burst !== undefined ? 'burst' : 'refillPerSecond';
    invalidOption(`${option}.${given}`, raw[given], `no burst or refillPerSecond with ${algorithm} (they belong to token-bucket and gcra)`);
  }
  const maxLimit = ALGORITHM[algorithm].maxLimit;
  if (maxLimit !== undefined && typeof get('limit') === 'number' && (get('limit') as number) > maxLimit) {
    invalidOption(`${option}.limit`, get('limit'), `a whole number from 1 to ${maxLimit} for ${algorithm}, which stores one entry per unit (sliding-window-counter takes up to ${MAX_UNITS})`);
  }
  const limit = units(`${option}.limit`, get('limit'));
  // The key does not depend on the window or the limit: a plan change keeps the subject's count.
  const store = calendar ? { algorithm, capacity: limit, windowMs, calendar } : { algorithm, capacity: limit, windowMs };
  return { name, algorithm, limit, windowMs, store, keySuffix };
}

/**
 * A list of limits (createLimiter's `limits`, or an API key's plan from `resolveKey`), validated
 * where it enters: 1 to 16 objects with unique names. `defaults` fill what each limit leaves out.
 */
export function resolveLimits(list: unknown, option = 'limits', defaults: LimitOptions = {}): ResolvedLimit[] {
  if (!Array.isArray(list) || list.length < 1 || list.length > 16) invalidOption(option, list, 'an array of 1 to 16 limit objects');
  const limits = list.map((l: LimitOptions, i) => resolveLimit(l, defaults, `${option}[${i}]`, list.length === 1 ? 'default' : `limit-${i + 1}`));
  const seen = new Set<string>();
  for (const l of limits) {
    if (seen.has(l.name)) invalidOption(option, l.name, 'unique `name`s');
    seen.add(l.name);
  }
  return limits;
}

/** The smallest limit or burst (an in-flight limit's at most MAX_LEASE_COST): the largest cost that can ever be admitted. */
export const maxCostOf = (limits: readonly ResolvedLimit[]) => Math.min(...limits.map((l) => (l.algorithm === 'concurrency' ? Math.min(l.limit, MAX_LEASE_COST) : l.limit)));

/**
 * Parses everything createLimiter takes. `where` names the options in errors ('createLimiter',
 * 'rateLimit'); `checkNames: false` when the caller already checked the names (the HTTP layer checks
 * its own wider set).
 */
export function resolveLimiterOptions(options: CreateLimiterOptions = {}, where = 'createLimiter', checkNames = true): ResolvedLimiterOptions {
  if (!options || typeof options !== 'object' || Array.isArray(options)) invalidOption('options', options, 'an object');
  if (checkNames) checkOptionNames(`${where} options`, options, LIMITER_OPTION_NAMES);
  const prefix = keyPrefix('prefix', options.prefix ?? 'fg');
  const store = options.store === undefined ? new MemoryStore() : storeOption('store', options.store);
  const limitCeiling = options.limitCeiling === undefined ? undefined : units('limitCeiling', options.limitCeiling);
  const dynamic = dynamicOf(options, limitCeiling);
  if (dynamic) options = placeholders(options, limitCeiling);
  let limits: ResolvedLimit[];
  if (options.limits !== undefined) {
    if (options.limit !== undefined || options.burst !== undefined) {
      invalidOption('limit', options.limit ?? options.burst, 'no top-level `limit` or `burst` when `limits` is given (set them per limit)');
    }
    if (options.name !== undefined) {
      invalidOption('name', options.name, 'no top-level `name` when `limits` is given (name each limit)');
    }
    if (options.window !== undefined && options.algorithm !== undefined && options.algorithm !== 'fixed-window') {
      invalidOption('algorithm', options.algorithm, "'fixed-window' (or no `algorithm`) with a calendar `window`: a quota per calendar period is a fixed window");
    }
    // Top-level algorithm, windowMs, window and refillPerSecond are defaults for every limit.
    limits = resolveLimits(options.limits, 'limits', { algorithm: options.algorithm, windowMs: options.windowMs, window: options.window, refillPerSecond: options.refillPerSecond });
  } else {
    limits = [resolveLimit(options, {}, 'options', 'default')];
  }
  if (limitCeiling !== undefined && !dynamic) for (const l of limits) if (l.limit > limitCeiling) invalidOption('limitCeiling', limitCeiling, `a number from ${l.limit} (policy '${l.name}' is ${l.limit})`);
  const overridesRaw = options.overrides;
  const overrides = typeof overridesRaw === 'object' && overridesRaw !== null ? true : bool('overrides', overridesRaw, false);
  if (typeof overridesRaw === 'object' && overridesRaw !== null) checkOptionNames('overrides', overridesRaw, ['pollMs']);
  const overridesPollMs =
    typeof overridesRaw === 'object' && overridesRaw !== null && overridesRaw.pollMs !== undefined ? wholeNumber('overrides.pollMs', overridesRaw.pollMs, 50, 3_600_000) : 1000;
  if (overrides && options.hotKeys !== undefined) invalidOption('hotKeys', options.hotKeys, 'no hotKeys with `overrides`: a subject served from leased blocks does not read its override');
  if (dynamic && options.hotKeys !== undefined) invalidOption('hotKeys', options.hotKeys, 'no hotKeys with limit functions: hot-key mode leases a fixed limit out in blocks');
  const clock = clockOption('clock', options.clock);
  const failure = resolveFailureOptions(options, store);
  const blockCacheSize = options.blockCacheSize === undefined ? 10_000 : wholeNumber('blockCacheSize', options.blockCacheSize, 0, 100_000_000);
  const concurrency = resolveConcurrency(options.concurrency);
  if (concurrency && options.hotKeys !== undefined) {
    invalidOption('hotKeys', options.hotKeys, 'no hotKeys with `concurrency`: a lease is held per request in the store, never leased out in blocks');
  }
  if (concurrency && limits.some((l) => l.name === concurrency.name)) {
    invalidOption('concurrency.name', concurrency.name, 'a name no limit in `limits` has');
  }
  const meterProvider = options.meterProvider;
  if (meterProvider !== undefined && (!meterProvider || typeof meterProvider.getMeter !== 'function')) {
    invalidOption('meterProvider', meterProvider, 'an OpenTelemetry MeterProvider (an object with getMeter), such as the SDK\'s');
  }
  const warnings = resolveWarnings(options.warnings);
  // Legal, so not an error; but `windowMs: 60` is nearly always a minute written in seconds.
  warnSecondsWindows(options as { windowMs?: unknown; limits?: readonly { windowMs?: unknown }[] }, failure.logger, warnings);
  return {
    store,
    prefix,
    limits,
    warnings,
    maxCost: maxCostOf(concurrency ? [...limits, concurrency] : limits),
    meterProvider,
    failure,
    blockCacheSize,
    clock,
    // A learned count changes while leases are out: hot-key mode takes a fixed one (its own, the limiter's, else 1).
    hotKeys: resolveLimiterHotKeys(options.hotKeys, { clock, instances: failure.instances }),
    lockout: resolveLockout(options.lockout),
    concurrency,
    settle: resolveSettle(options.settle, limits),
    limitCeiling,
    dynamic,
    overrides,
    overridesPollMs,
    onOverride: optionalFunction('onOverride', options.onOverride),
  };
}

/** Limit functions stand for this many units in the placeholders, without a `limitCeiling`. */
const PLACEHOLDER_UNITS = 1000;

/** The limit functions kept for the requests, or undefined when every limit is a number. */
function dynamicOf(options: CreateLimiterOptions, ceiling: number | undefined): DynamicLimits | undefined {
  if (!hasFunctions(options as Record<string, unknown>)) return undefined;
  const valuesMax = wholeNumber('limitValuesMax', options.limitValuesMax ?? DEFAULT_LIMIT_VALUES_MAX, 1, 1_000_000);
  for (const f of ['limit', 'burst'] as const) if (typeof options[f] === 'function' && options.limits !== undefined) {
    invalidOption(f, options[f], `no top-level \`${f}\` when \`limits\` is given (set them per limit)`);
  }
  const windowFunction = typeof options.windowMs === 'function' || (Array.isArray(options.limits) && options.limits.some((l) => typeof l?.windowMs === 'function'));
  const defaults: LimitOptions = { algorithm: options.algorithm, windowMs: options.windowMs, window: options.window, refillPerSecond: options.refillPerSecond };
  if (typeof options.limits === 'function') return { limits: options.limits, single: undefined, defaults, ceiling, valuesMax, windowFunction: typeof options.windowMs === 'function' };
  if (Array.isArray(options.limits)) {
    // The top-level window and refill functions are each limit's unless it sets its own, as numbers are.
    const limits = options.limits.map((l) => ({ ...(l.windowMs === undefined && l.window === undefined ? { windowMs: options.windowMs } : {}), refillPerSecond: options.refillPerSecond, ...l }));
    return { limits, single: undefined, defaults, ceiling, valuesMax, windowFunction };
  }
  const single: LimitOptions = {};
  for (const k of LIMIT_OPTION_NAMES) if (options[k as keyof LimitOptions] !== undefined) (single as Record<string, unknown>)[k] = options[k as keyof LimitOptions];
  return { limits: undefined, single, defaults, ceiling, valuesMax, windowFunction };
}

/** The options with each function replaced by a placeholder number (the ceiling, else PLACEHOLDER_UNITS; a window: 60 s), for the static parts. */
function placeholders(options: CreateLimiterOptions, ceiling: number | undefined): CreateLimiterOptions {
  const units = ceiling ?? PLACEHOLDER_UNITS;
  const fill = <T extends LimitOptions>(l: T): T => {
    const out: Record<string, unknown> = { ...(l as Record<string, unknown>) };
    for (const f of DYNAMIC_FIELDS) if (typeof out[f] === 'function') out[f] = f === 'windowMs' ? 60_000 : f === 'refillPerSecond' ? undefined : units;
    return out as T;
  };
  const top = fill(options);
  if (typeof options.limits === 'function') return { ...top, limits: [{ limit: units }] };
  if (Array.isArray(options.limits)) return { ...top, limits: options.limits.map(fill) };
  return top;
}
