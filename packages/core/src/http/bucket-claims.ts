// One definition per bucket: two limiters that would count in the same keys with different limits fail loudly instead of resetting each other.
import { FloodgateError } from '../base/errors';
import { periodOf } from '../algorithms/registry';
import { windowWords, type ResolvedLimit } from '../model/limit';
import type { Store } from '../stores/store';
import { runtimeFor, type BucketClaim } from '../failure/store-runtime';

/**
 * Most bucket definitions one store keeps. Scopes come from the app's routes and a bounded set of
 * method words (http/scope.ts), so an app stays far below it; past it a new bucket is counted
 * without its definition being compared, so no request data can grow this map.
 */
export const CLAIMS_MAX = 100_000;

function definitionOf(l: ResolvedLimit): string {
  return `${l.store.algorithm}|${l.store.capacity}|${periodOf(l.store)}`;
}

function describeLimit(l: ResolvedLimit): string {
  return 'refillPerSecond' in l.store
    ? `${l.algorithm} burst ${l.store.capacity}, ${l.store.refillPerSecond}/s`
    : `${l.algorithm} ${l.limit} per ${windowWords(l)}`;
}

/**
 * Records that the limiter at `where` counts `scope`'s buckets (one per limit) on this store under
 * this prefix with these definitions. Throws FG_BUCKET_CONFLICT when another limiter already counts
 * the same bucket with a different definition: they would share one counter under two limits (and
 * a window of one length would read the other's counts). Idempotent for equal definitions.
 */
export function claimBuckets(store: Store, prefix: string, scope: string, limits: readonly ResolvedLimit[], where: string): void {
  // Per store object (its runtime): two stores on one Redis are not seen here (a different `prefix` is the answer there too).
  const byBucket = runtimeFor(store).claims;
  for (const l of limits) {
    const bucket = `${prefix}\u0000${scope}\u0000${l.keySuffix}`;
    const mine: BucketClaim = { definition: definitionOf(l), describe: describeLimit(l), where };
    const theirs = byBucket.get(bucket);
    if (!theirs) {
      if (byBucket.size < CLAIMS_MAX) byBucket.set(bucket, mine);
      continue;
    }
    if (theirs.definition === mine.definition) continue;
    throw new FloodgateError(
      'FG_BUCKET_CONFLICT',
      `Bucket conflict: \`${scope}\` policy \`${l.name}\` (prefix \`${prefix}\`) is ${theirs.describe} in the limiter for ${theirs.where}, ` +
        `and ${mine.describe} in the limiter for ${where}; on one store they would count in one key. ` +
        'Give one of them its own `name` (or `group`, or `prefix`), or define the bucket the same way in both.',
      'group',
    );
  }
}

/** How many bucket definitions this store holds (at most CLAIMS_MAX): for tests that check no request data grows them. */
export function bucketClaimsHeld(store: Store): number {
  return runtimeFor(store).claims.size;
}

/** A stack frame's file location (`path:line:col`), without a file:// scheme; undefined for a frame without one. */
function frameLocation(line: string): string | undefined {
  const at = /\(?((?:file:\/\/)?[^\s()]+:\d+:\d+)\)?\s*$/.exec(line);
  return at ? at[1].replace(/^file:\/\//, '') : undefined;
}

/**
 * Where a limiter was made, for FG_BUCKET_CONFLICT messages: the first stack frame outside
 * Floodgate's own packages' code and outside node_modules (the app's `rateLimit(...)` call), or undefined.
 * Floodgate's packages are found from this very file's frame (their common folder: the workspace's
 * `packages/` or `node_modules/@floodgate/`), so core names no adapter and a new one needs no edit here.
 */
export function callSite(): string | undefined {
  const stack = new Error().stack?.split('\n').slice(1) ?? [];
  const own = frameLocation(stack[0] ?? '');
  const root = own && /^(.*[\\/])core[\\/](?:src|dist)[\\/]/.exec(own)?.[1];
  for (const line of stack.slice(1)) {
    const location = frameLocation(line);
    if (!location || location.startsWith('node:')) continue;
    // A package's own code (its src or dist), not its tests: a test that builds a limiter is a call site.
    if (root && location.startsWith(root) && /^[^\\/]+[\\/](?:src|dist)[\\/]/.test(location.slice(root.length))) continue;
    if (/[\\/]node_modules[\\/]/.test(location)) continue;
    return location;
  }
  return undefined;
}
