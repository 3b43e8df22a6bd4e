// Redis keys: `<prefix>:{<digest of scope + identity>}:<policy>`. Raw identities never reach Redis.
import { sha256Base64url as digestOf } from './digest';

// The same callers come back request after request: remember their keys (bounded, short identities
// only). Nested maps keyed by the strings the caller already has: no string is built to look one up.
const MEMO_MAX = 20_000;
const MEMO_MAX_INPUT = 512;
const memo = new Map<string, Map<string, Map<string, string>>>();
let memoSize = 0;

/**
 * The subject part of every key of one caller in one scope: a fixed-length digest inside a hash
 * tag, so a key's length is bounded, no input can inject `:` or `{}`, a Redis dump shows no API
 * key or IP, and all keys of one subject live in one Redis Cluster slot.
 */
export function subjectKey(prefix: string, scope: string, identity: string): string {
  const cacheable = prefix.length + scope.length + identity.length <= MEMO_MAX_INPUT;
  let byIdentity: Map<string, string> | undefined;
  if (cacheable) {
    let byScope = memo.get(prefix);
    if (byScope === undefined) memo.set(prefix, (byScope = new Map()));
    byIdentity = byScope.get(scope);
    if (byIdentity === undefined) byScope.set(scope, (byIdentity = new Map()));
    const hit = byIdentity.get(identity);
    if (hit !== undefined) return hit;
  }
  // The scope's length first: no scope and identity pair can spell another pair's input.
  const key = `${prefix}:{${digestOf(`${scope.length}:${scope}\u0000${identity}`).slice(0, 22)}}`;
  if (byIdentity) {
    // Bounded: past MEMO_MAX remembered keys, start over (a miss only costs one digest).
    if (memoSize >= MEMO_MAX) {
      memo.clear();
      memoSize = 0;
      return key;
    }
    byIdentity.set(identity, key);
    memoSize++;
  }
  return key;
}

/**
 * The fleet's key for a limiter prefix: `<prefix>.instances`, beside the limiters' `<prefix>:*`
 * keys rather than among them, so that a SCAN of a prefix's keys finds subjects' state only; the
 * ACL rule names it (stores/redis/acl.ts). No subject key can equal it (every one has a ':'), and
 * every command on it names it alone: on a Cluster it lives in its own slot.
 */
export function fleetKey(prefix: string): string {
  return `${prefix}.instances`;
}

/**
 * Where the instances of a prefix's fleet record what their limiters are configured with:
 * `<prefix>.configs`, a hash beside `<prefix>.instances` (failure/fleet-count.ts: two apps on one prefix
 * are told so, FG_PREFIX_SHARED). Named by the ACL rule likewise.
 */
export function fleetConfigsKey(prefix: string): string {
  return `${prefix}.configs`;
}
