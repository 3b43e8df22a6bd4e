// Limiter options: parsed once, in one place, into a resolved form; the caller's object is never mutated.
import { ALGORITHM, ALGORITHMS, type AlgorithmName, type StoreLimit } from './algorithms/registry';
import { parseDuration, type Duration } from './duration';
import { invalidOption } from './errors';
import { resolveFailureOptions, type FailureOptions, type ResolvedFailureOptions } from './failure/policy';
import type { Store } from './stores/store';
import { MemoryStore } from './stores/memory-store';

const MAX_UNITS = 1_000_000_000;

/** One limit. Window algorithms use `limit` per `windowMs`; token-bucket and gcra use `burst` and `refillPerSecond`. */
export interface LimitOptions {
  /** Policy name, shown in draft-10 headers and part of the key. `[A-Za-z0-9_.-]{1,64}`. Default 'default' (or 'limit-N' in `limits`). */
  name?: string;
  /** Default 'sliding-window-counter'. */
  algorithm?: AlgorithmName;
  /** Units admitted per window (window algorithms); the default burst for token-bucket and gcra. */
  limit?: number;
  /** The window, in ms or as a duration string ('1m'). Default 60_000. */
  windowMs?: Duration;
  /** token-bucket and gcra: the most units admitted at once. Default `limit`. */
  burst?: number;
  /** token-bucket and gcra: units restored per second. Default `limit / windowSeconds`. */
  refillPerSecond?: number;
}

export interface LimiterOptions extends LimitOptions, FailureOptions {
  /** Where counts live. Default: a new MemoryStore (per process). */
  store?: Store;
  /** Key prefix. `[A-Za-z0-9_.-]{1,32}`. Default 'fg'. */
  prefix?: string;
  /** Several limits on one subject, checked all-or-nothing in one atomic step (e.g. burst + sustained). */
  limits?: LimitOptions[];
}

export interface ResolvedLimit {
  readonly name: string;
  readonly algorithm: AlgorithmName;
  /** The limit (window algorithms) or burst (token-bucket, gcra). */
  readonly limit: number;
  /** The window; for token-bucket and gcra, the time to refill a full burst. */
  readonly windowMs: number;
  /** What the store is sent. */
  readonly store: StoreLimit;
  /** The last part of this limit's key. */
  readonly keySuffix: string;
}

export interface ResolvedLimiterOptions {
  readonly store: Store;
  readonly prefix: string;
  readonly limits: readonly ResolvedLimit[];
  /** The smallest limit: no request of a larger cost can ever be admitted. */
  readonly maxCost: number;
  /** What happens when the store fails: failure mode, deadline, breaker, reporting. */
  readonly failure: ResolvedFailureOptions;
}

const NAME = /^[A-Za-z0-9_.-]{1,64}$/;

function units(option: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_UNITS) {
    invalidOption(option, value, `a whole number from 1 to ${MAX_UNITS}`);
  }
  return value;
}

function resolveLimit(raw: LimitOptions, defaults: LimitOptions, option: string, defaultName: string): ResolvedLimit {
  if (!raw || typeof raw !== 'object') invalidOption(option, raw, 'an object');
  const get = <K extends keyof LimitOptions>(k: K) => (raw[k] !== undefined ? raw[k] : defaults[k]);
  const algorithm = get('algorithm') ?? 'sliding-window-counter';
  if (!ALGORITHMS.includes(algorithm)) invalidOption(`${option}.algorithm`, algorithm, `one of ${ALGORITHMS.join(', ')}`);
  const name = raw.name ?? defaultName;
  if (typeof name !== 'string' || !NAME.test(name)) invalidOption(`${option}.name`, name, 'a string matching [A-Za-z0-9_.-]{1,64}');
  const windowMs = parseDuration(`${option}.windowMs`, get('windowMs') ?? 60_000);
  const keySuffix = `${name}.${ALGORITHM[algorithm].keySuffix}`;

  if (ALGORITHM[algorithm].family === 'rate') {
    const limitRaw = get('limit');
    const burstRaw = get('burst') ?? limitRaw;
    if (burstRaw === undefined) invalidOption(`${option}.burst`, undefined, 'a whole number from 1 (or set `limit`)');
    const burst = units(raw.burst !== undefined || defaults.burst !== undefined ? `${option}.burst` : `${option}.limit`, burstRaw);
    const perWindow = limitRaw !== undefined ? units(`${option}.limit`, limitRaw) : burst;
    const rate = get('refillPerSecond') ?? perWindow / (windowMs / 1000);
    if (typeof rate !== 'number' || !Number.isFinite(rate) || rate <= 0 || rate > 1_000_000) {
      invalidOption(`${option}.refillPerSecond`, rate, 'a number above 0 and at most 1000000');
    }
    // gcra keeps whole microseconds; burst x emission interval must stay an exact double.
    if (algorithm === 'gcra' && burst * Math.max(1, Math.floor(1e6 / rate + 0.5)) > Number.MAX_SAFE_INTEGER) {
      invalidOption(`${option}.refillPerSecond`, rate, `a rate at which burst (${burst}) x 1e6 / refillPerSecond stays below 2^53 for gcra`);
    }
    return {
      name,
      algorithm,
      limit: burst,
      windowMs: Math.ceil((burst * 1000) / rate),
      store: { algorithm, capacity: burst, period: rate },
      keySuffix,
    };
  }
  if (raw.burst !== undefined || raw.refillPerSecond !== undefined) {
    const given = raw.burst !== undefined ? 'burst' : 'refillPerSecond';
    invalidOption(`${option}.${given}`, raw[given], `no burst or refillPerSecond with ${algorithm} (they belong to token-bucket and gcra)`);
  }
  const limit = units(`${option}.limit`, get('limit'));
  return { name, algorithm, limit, windowMs, store: { algorithm, capacity: limit, period: windowMs }, keySuffix };
}

export function resolveLimiterOptions(options: LimiterOptions = {}): ResolvedLimiterOptions {
  if (!options || typeof options !== 'object') invalidOption('options', options, 'an object');
  const prefix = options.prefix ?? 'fg';
  if (typeof prefix !== 'string' || !/^[A-Za-z0-9_.-]{1,32}$/.test(prefix)) {
    invalidOption('prefix', prefix, 'a string matching [A-Za-z0-9_.-]{1,32}');
  }
  const store = options.store ?? new MemoryStore();
  if (!store || typeof store.evaluate !== 'function' || typeof store.reset !== 'function') {
    invalidOption('store', store, 'a Store such as new MemoryStore() or new RedisStore({ client })');
  }
  let limits: ResolvedLimit[];
  if (options.limits !== undefined) {
    if (options.limit !== undefined || options.burst !== undefined) {
      invalidOption('limit', options.limit ?? options.burst, 'no top-level `limit` or `burst` when `limits` is given (set them per limit)');
    }
    if (!Array.isArray(options.limits) || options.limits.length < 1 || options.limits.length > 16) {
      invalidOption('limits', options.limits, 'an array of 1 to 16 limit objects');
    }
    if (options.name !== undefined) {
      invalidOption('name', options.name, 'no top-level `name` when `limits` is given (name each limit)');
    }
    // Top-level algorithm, windowMs and refillPerSecond are defaults for every limit.
    const defaults: LimitOptions = { algorithm: options.algorithm, windowMs: options.windowMs, refillPerSecond: options.refillPerSecond };
    limits = options.limits.map((l, i) => resolveLimit(l, defaults, `limits[${i}]`, options.limits!.length === 1 ? 'default' : `limit-${i + 1}`));
    const seen = new Set<string>();
    for (const l of limits) {
      if (seen.has(l.name)) invalidOption('limits', l.name, 'unique `name`s');
      seen.add(l.name);
    }
  } else {
    limits = [resolveLimit(options, {}, 'options', 'default')];
  }
  const failure = resolveFailureOptions(options, store);
  return { store, prefix, limits, maxCost: Math.min(...limits.map((l) => l.limit)), failure };
}
