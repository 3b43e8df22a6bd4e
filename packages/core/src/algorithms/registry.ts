// The algorithm registry: the one list of algorithms, from which every other part of core derives them.
// In registry order, which is also the order TypeScript lists the AlgorithmName union in.
import { fixedWindowAlgorithm } from './fixed-window';
import { slidingWindowLogAlgorithm } from './sliding-window-log';
import { slidingWindowCounterAlgorithm } from './sliding-window-counter';
import { tokenBucketAlgorithm } from './token-bucket';
import { gcraAlgorithm } from './gcra';
import type { AlgorithmDescriptor, RateLimit, WindowLimit } from './types';

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

/** A descriptor as the registry hands it out: with its numeric id, sent to Lua in ARGV. */
export type RegisteredAlgorithm = AlgorithmDescriptor<AlgorithmName> & { readonly id: number };

// A generic mapped type, so that TypeScript maps the tuple element by element.
type Names<T extends readonly AlgorithmDescriptor[]> = { readonly [K in keyof T]: T[K]['name'] };

/** The algorithm names, in registry order. */
export const ALGORITHMS = REGISTRY.map((d) => d.name) as unknown as Names<typeof REGISTRY>;

export type AlgorithmName = (typeof ALGORITHMS)[number];
/** The algorithms of each family: a limit of `limit` per `windowMs`, or of a `burst` refilled at `refillPerSecond`. */
export type WindowAlgorithmName = Extract<(typeof REGISTRY)[number], { family: 'window' }>['name'];
export type RateAlgorithmName = Extract<(typeof REGISTRY)[number], { family: 'rate' }>['name'];

/** Each algorithm's registered descriptor, by name. */
export const ALGORITHM = Object.fromEntries(
  REGISTRY.map((d, i): [AlgorithmName, RegisteredAlgorithm] => [d.name, { ...d, id: i + 1 }]),
) as Readonly<Record<AlgorithmName, RegisteredAlgorithm>>;

// Two descriptors sharing a name or a key suffix would read and write each other's state.
for (const field of ['name', 'keySuffix'] as const) {
  const seen = new Set(REGISTRY.map((d) => d[field]));
  if (seen.size !== REGISTRY.length) throw new Error(`algorithms/registry.ts: two algorithms share a ${field}`);
}

/**
 * One limit as the store sees it, each field in its own unit: `capacity` per `windowMs` for the
 * window algorithms, a burst of `capacity` refilled at `refillPerSecond` for token-bucket and gcra.
 * A twin reads the same without `algorithm`.
 */
export type StoreLimit = (WindowLimit & { readonly algorithm: WindowAlgorithmName }) | (RateLimit & { readonly algorithm: RateAlgorithmName });

/** Whether this algorithm takes a burst and a refill rate (token-bucket, gcra) rather than a limit per window. */
export function isRateAlgorithm(name: AlgorithmName): name is RateAlgorithmName {
  return ALGORITHM[name].family === 'rate';
}

/**
 * The one number the scripts (and the `period` of their check and refund) take for a limit, in the
 * unit its algorithm knows: the window in ms, or the refill rate in units per second.
 */
export function periodOf(limit: StoreLimit): number {
  return 'windowMs' in limit ? limit.windowMs : limit.refillPerSecond;
}
