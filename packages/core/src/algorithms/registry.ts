// The algorithm registry: the one list of algorithms, from which every other part of core derives them.
// In registry order, which is also the order TypeScript lists the AlgorithmName union in.
import { fixedWindowAlgorithm } from './fixed-window';
import { slidingWindowLogAlgorithm } from './sliding-window-log';
import { slidingWindowCounterAlgorithm } from './sliding-window-counter';
import { tokenBucketAlgorithm } from './token-bucket';
import { gcraAlgorithm } from './gcra';
import { concurrencyAlgorithm } from './concurrency';
import type { AlgorithmDescriptor, LeaseLimit, RateLimit, WindowLimit } from './types';

/**
 * Every algorithm, in id order: an algorithm's id in the script protocol is its position here,
 * from 1. Add a new one at the end. Reordering would be safe (stored keys carry `keySuffix`, not
 * the id, and client and script take their ids from this same list) but changes every script hash.
 */
const REGISTRY = [
  fixedWindowAlgorithm,
  slidingWindowLogAlgorithm,
  slidingWindowCounterAlgorithm,
  tokenBucketAlgorithm,
  gcraAlgorithm,
] as const;

/**
 * Limit kinds that are not an `algorithm` option's value, with ids after the algorithms': the
 * in-flight lease (option `concurrency`). They share the script protocol, the twins and the stores,
 * so a lease is decided in the same atomic step as the request's rate limits.
 */
const LEASES = [concurrencyAlgorithm] as const;
const KINDS = [...REGISTRY, ...LEASES] as const;

/** A descriptor as the registry hands it out: with its numeric id, sent to Lua in ARGV. */
export type RegisteredAlgorithm = AlgorithmDescriptor<LimitKind> & { readonly id: number };

// A generic mapped type, so that TypeScript maps the tuple element by element.
type Names<T extends readonly AlgorithmDescriptor[]> = { readonly [K in keyof T]: T[K]['name'] };

/** The algorithm names, in registry order. */
export const ALGORITHMS = REGISTRY.map((d) => d.name) as unknown as Names<typeof REGISTRY>;

export type AlgorithmName = (typeof ALGORITHMS)[number];
/** The algorithms of each family: a limit of `limit` per `windowMs`, or of a `burst` refilled at `refillPerSecond`. */
export type WindowAlgorithmName = Extract<(typeof REGISTRY)[number], { family: 'window' }>['name'];
export type RateAlgorithmName = Extract<(typeof REGISTRY)[number], { family: 'rate' }>['name'];
/** The lease kinds (concurrency): not an `algorithm` option's value. */
export type LeaseKindName = (typeof LEASES)[number]['name'];

/** Every limit kind a store decides: the algorithms, then the leases. */
export const LIMIT_KINDS = KINDS.map((d) => d.name) as unknown as Names<typeof KINDS>;
export type LimitKind = (typeof LIMIT_KINDS)[number];

/** Each kind's registered descriptor, by name. */
export const ALGORITHM = Object.fromEntries(
  KINDS.map((d, i): [LimitKind, RegisteredAlgorithm] => [d.name, { ...d, id: i + 1 }]),
) as Readonly<Record<LimitKind, RegisteredAlgorithm>>;

// Two descriptors sharing a name or a key suffix would read and write each other's state.
for (const field of ['name', 'keySuffix'] as const) {
  const seen = new Set(KINDS.map((d) => d[field]));
  if (seen.size !== KINDS.length) throw new Error(`algorithms/registry.ts: two algorithms share a ${field}`);
}

/**
 * One limit as the store sees it, each field in its own unit: `capacity` per `windowMs` for the
 * window algorithms, a burst of `capacity` refilled at `refillPerSecond` for token-bucket and gcra,
 * `capacity` leases of `leaseMs` each for concurrency. A twin reads the same without `algorithm`.
 */
export type StoreLimit =
  | (WindowLimit & { readonly algorithm: WindowAlgorithmName })
  | (RateLimit & { readonly algorithm: RateAlgorithmName })
  | (LeaseLimit & { readonly algorithm: LeaseKindName });

/** Whether this algorithm takes a burst and a refill rate (token-bucket, gcra) rather than a limit per window. */
export function isRateAlgorithm(name: AlgorithmName): name is RateAlgorithmName {
  return ALGORITHM[name].family === 'rate';
}

/**
 * What defines a limit's periods, in the unit its kind knows: the window in ms, the refill rate in
 * units per second, or the lease in ms; for a calendar window, its id. Equal periods, equal values
 * (plan names, bucket claims and hot keys compare limits by it).
 */
export function periodOf(limit: StoreLimit): number | string {
  if ('windowMs' in limit) return limit.calendar ? limit.calendar.id : limit.windowMs;
  return 'refillPerSecond' in limit ? limit.refillPerSecond : limit.leaseMs;
}

/**
 * The `period` a script call carries for a limit: periodOf's number, or a calendar window's
 * boundaries around `now` (the application's clock, or the test clock), among which the script
 * picks by its own TIME.
 */
export function periodArg(limit: StoreLimit, now: () => number): number | string {
  if ('windowMs' in limit && limit.calendar) return limit.calendar.around(now()).text;
  return 'windowMs' in limit ? limit.windowMs : 'refillPerSecond' in limit ? limit.refillPerSecond : limit.leaseMs;
}
