// The algorithm registry: the one list of algorithms, from which every other part of core derives them.
// In registry order, which is also the order TypeScript lists the AlgorithmName union in.
import { fixedWindowAlgorithm } from './fixed-window';
import { slidingWindowLogAlgorithm } from './sliding-window-log';
import { slidingWindowCounterAlgorithm } from './sliding-window-counter';
import { tokenBucketAlgorithm } from './token-bucket';
import { gcraAlgorithm } from './gcra';
import type { AlgorithmDescriptor } from './types';

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
export interface RegisteredAlgorithm extends AlgorithmDescriptor<AlgorithmName> {
  readonly id: number;
}

// A generic mapped type, so that TypeScript maps the tuple element by element.
type Names<T extends readonly AlgorithmDescriptor[]> = { readonly [K in keyof T]: T[K]['name'] };

/** The algorithm names, in registry order. */
export const ALGORITHMS = REGISTRY.map((d) => d.name) as unknown as Names<typeof REGISTRY>;

export type AlgorithmName = (typeof ALGORITHMS)[number];

/** Each algorithm's registered descriptor, by name. */
export const ALGORITHM = Object.fromEntries(
  REGISTRY.map((d, i): [AlgorithmName, RegisteredAlgorithm] => [d.name, { ...d, id: i + 1 }]),
) as Readonly<Record<AlgorithmName, RegisteredAlgorithm>>;

// Two descriptors sharing a name or a key suffix would read and write each other's state.
for (const field of ['name', 'keySuffix'] as const) {
  const seen = new Set(REGISTRY.map((d) => d[field]));
  if (seen.size !== REGISTRY.length) throw new Error(`algorithms/registry.ts: two algorithms share a ${field}`);
}

/** One limit as the store sees it; a twin reads the same without `algorithm`. */
export interface StoreLimit {
  readonly algorithm: AlgorithmName;
  /** The limit (window algorithms) or the burst (rate algorithms). */
  readonly capacity: number;
  /** The algorithm's family says the unit: the window in ms ('window'), or units per second ('rate'). */
  readonly period: number;
}
