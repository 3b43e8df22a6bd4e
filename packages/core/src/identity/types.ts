// Identity's shapes: the facts an adapter hands over, the options, what a caller is identified as, and the identify function's type.
import type { Duration } from '../base/duration';
import type { ResolvedLimit } from '../model/limit';
import type { LimitOptions } from '../engine/options';
import type { Logger } from '../base/logger';
import type { Headers } from './api-key';
import type { ResolveKey } from './key-cache';
import type { WarningCode, WarningSwitches } from '../base/warnings';

/** The facts an adapter reads from its framework's request. */
export interface RequestFacts {
  /** The client IP as the framework reports it under its own trust-proxy setting. */
  readonly ip: string | undefined;
  /** Request headers with lower-case names, as Node's IncomingHttpHeaders. */
  readonly headers: Headers;
  readonly method: string;
  /** The matched route pattern ('/users/:id'), never the raw URL; undefined when none matched. */
  readonly route: string | undefined;
  /**
   * True when the matched route answers every method (Express `app.all`, @koa/router `all`, Fastify
   * `all`, Hono `app.all`, Nest `@All()`): its bucket is `ALL /pattern`, whatever the method, so a
   * client cannot buy a fresh budget by changing it. Left out: the route's bucket is per method.
   */
  readonly allMethods?: boolean;
  /**
   * How the framework's trust-proxy setting makes `ip`: 'none' (the socket's peer; proxy headers
   * are ignored), 'some' (a hop count or a list of proxies), 'all' (every proxy is trusted: `ip` is
   * the first X-Forwarded-For entry, which the client writes). Undefined: not known, not checked.
   * Read for the FG_PROXY_HEADER_UNTRUSTED and FG_TRUST_PROXY_ALL warnings only.
   */
  readonly trustProxy?: 'none' | 'some' | 'all';
  /**
   * Aborted when the client goes away before its response finished: a request held on a shaped
   * route (option `shape`) then gives its slot back. Adapters pass it on shaped routes only (Node:
   * signalOnClose(res); Web: the Request's own signal). Undefined: a held request stays held.
   */
  readonly signal?: AbortSignal;
}

/** Warnings identity can write; each can be switched off by name in `warnings`. */
export type IdentityWarning =
  /** A request without a client IP reached the limiter (it is limited in the shared 'ip:unknown' bucket). */
  | 'FG_IP_MISSING'
  /** The framework reported something that is not an IP address (same fallback). */
  | 'FG_IP_MALFORMED'
  /** An API key longer than `maxApiKeyLength` (treated as an unknown key, without a lookup). */
  | 'FG_API_KEY_TOO_LONG'
  /** `resolveKey` threw, rejected, returned a bad value or timed out (the request falls back; see docs/identity.md). */
  | 'FG_RESOLVE_KEY_FAILED'
  /** `resolveKey` returned `limits` the limiter rejects (the key gets the route's limits). */
  | 'FG_RESOLVE_KEY_BAD_PLAN';

export interface IdentityOptions {
  /**
   * Headers that carry an API key, checked in order. `Authorization: Bearer <key>` is read from
   * 'authorization'. A key counts as the caller only once `resolveKey` has verified it (or with
   * `unverifiedKeys: { trust }` names its header). Default ['authorization', 'x-api-key']; false to key on IP only.
   */
  apiKeyHeaders?: string[] | false;
  /** Prefix length IPv6 addresses are keyed on: a whole number from 1 to 128. Default 64. */
  ipv6Subnet?: number;
  /**
   * Longest API key, in characters. A longer one is not a key anyone was issued: it is treated as
   * an unknown key without calling `resolveKey`. From 1 to 16384. Default 4096.
   */
  maxApiKeyLength?: number;
  /**
   * Looks an API key up (e.g. in your database): `{ account, limits? }` for a key you issued, null
   * or undefined for one you did not. Called through a bounded cache (`keyCache`), one lookup in
   * flight per key, and only when the caller is not already blocked. Default: none (a request
   * that carries a key is limited by its client IP: see `unverifiedKeys`).
   */
  resolveKey?: ResolveKey;
  /**
   * Without `resolveKey` no key can be verified, and a client can invent a new one per request.
   * 'ip' (the default) limits such a request by its client IP, as if it carried no key, so an
   * invented key never buys a fresh budget. `{ trust: 'x-api-key' }` keys each distinct key in
   * that one header on its own bucket: only for an app whose keys in that header were already
   * verified upstream (an API gateway that rejects unknown keys), since otherwise every invented key
   * is a new, full budget. Keys in the other `apiKeyHeaders` stay unverified (their IP's bucket),
   * so a client cannot add an invented `Authorization: Bearer` beside the verified key. The bare
   * 'trust' is accepted only with a single `apiKeyHeaders` entry (it trusts that one); with several
   * it is FG_INVALID_OPTION, naming the fix. Not with `resolveKey`.
   */
  unverifiedKeys?: 'ip' | 'trust' | { trust: string };
  /**
   * What a request with a key `resolveKey` does not know gets: 'ip' limits it by its client IP, as
   * if it carried no key; 'reject' marks it for a 401 answer (`Identity.rejected`), counted
   * against the client IP's budget (so the 401 path is limited too: past the IP's limit it
   * answers 429). Needs `resolveKey`. Default 'ip'.
   */
  unknownKey?: 'ip' | 'reject';
  /** The `resolveKey` cache. */
  keyCache?: {
    /** Most found keys remembered. Default 10_000. */
    max?: number;
    /** Most unknown keys remembered, in a cache of their own, so invented keys never push found ones out. Default 10_000. */
    unknownMax?: number;
    /** How long a found key's answer is reused: also how long a revoked key keeps its plan. Default '60s'. */
    ttlMs?: Duration;
    /** How long an unknown key's answer is reused: also how long a new key waits to be known. Default '10s'. */
    unknownTtlMs?: Duration;
    /**
     * Lookups per client IP (per IPv6 /64) per `lookupWindowMs`: every lookup of a key not known
     * to be verified (never seen, or answered unknown before) spends one, and so does every
     * request whose key the cache answers unknown. Past it, such a key from that IP is treated as
     * unknown without a lookup (limited by IP, or 401 with `unknownKey: 'reject'`), so a client
     * inventing keys, or repeating keys already answered unknown, costs at most this many lookups.
     * Free: a request joining a lookup already in flight, a found key's cached answer, and its
     * refresh (one per key per `ttlMs`). Default 10.
     */
    lookupsPerIp?: number;
    /** The window of `lookupsPerIp`. Default '1m'. */
    lookupWindowMs?: Duration;
    /**
     * Most `resolveKey` lookups in flight at once (over all keys and IPs), from 1 to 1_000_000.
     * Past it, a request that would start one is answered at once as a failed lookup is: the
     * key's last answer, else its client IP (`keyStatus: 'lookup-failed'`), never a budget of its
     * own and never a wait. Default 1_000.
     */
    maxInFlight?: number;
  };
  /**
   * A lookup's deadline: past it every request waiting for it goes on without it (the key's last
   * answer, else its IP), the lookup's slot is freed and the `signal` handed to `resolveKey` is
   * aborted; an answer that still comes is cached. Default '1s'.
   */
  resolveTimeoutMs?: Duration;
  /**
   * Where warnings go: the limiter's logger (only `warn` is used). Each warning is written once;
   * lookup failures once per outage. Default console.
   */
  logger?: Logger;
  /** Switch single warnings off by name, e.g. `{ FG_IP_MISSING: false }` (docs/errors.md#warnings). Default: all on. */
  warnings?: WarningSwitches;
  /** Monotonic clock in ms for the cache's TTLs. Default performance.now. */
  clock?: () => number;
}

export interface Identity {
  /** What the bucket is keyed on; hashed before it reaches any store. API keys are already a SHA-256 digest here. */
  readonly subject: string;
  /** 'unknown': no usable client IP; the request is limited in the one shared bucket 'ip:unknown'. */
  readonly kind: 'api-key' | 'ip' | 'custom' | 'unknown';
  /** What `resolveKey` returned for this API key, when one is configured. */
  readonly account?: unknown;
  /**
   * The key's plan from `resolveKey` (validated): enforce these instead of the route's limits. The
   * http layer keeps one limiter per `plan`.
   */
  readonly limits?: readonly LimitOptions[];
  /** `limits`, parsed: what the http layer builds the plan's limiter from. Set exactly when `limits` is. */
  readonly resolvedLimits?: readonly ResolvedLimit[];
  /** A stable name for `limits`: equal plans have equal names. Set exactly when `limits` is. */
  readonly plan?: string;
  /**
   * When the request carried an API key: 'known' (resolveKey found it), 'unknown' (it did not, or
   * the key was too long), 'unverified' (no resolveKey), 'unchecked' (never looked up: the client
   * IP was already blocked, or spent its `keyCache.lookupsPerIp`), 'lookup-failed' (resolveKey
   * failed or timed out, or `keyCache.maxInFlight` lookups were in flight, and no earlier answer was
   * cached).
   */
  readonly keyStatus?: 'known' | 'unknown' | 'unverified' | 'unchecked' | 'lookup-failed';
  /**
   * 'unknown-key': an unknown key with `unknownKey: 'reject'`. `subject` is then the client IP's:
   * the request is counted against it and answered 401 while the IP is within its limit, 429 past it.
   */
  readonly rejected?: 'unknown-key';
}

/** Lets the caller of `identify` skip the key lookup for a caller it already denies. */
export interface IdentifyHooks {
  /**
   * Called only when a `resolveKey` lookup would follow, with the identity the request would most
   * likely get (from the last, possibly expired, cached answer; else the hashed key). Return true
   * when that identity is denied right now (the limiter's block cache has it): `identify` then
   * returns that identity at once, with no lookup, and the limiter answers it from its block cache.
   */
  isBlocked?(identity: Identity): boolean;
}

export type Identify = (facts: RequestFacts, hooks?: IdentifyHooks) => Identity | Promise<Identity>;

/** Identity options after parsing: what `identifyFrom` builds on. */
export interface ResolvedIdentityOptions {
  readonly headers: readonly string[];
  readonly ipv6Subnet: number;
  readonly maxApiKeyLength: number;
  readonly resolveKey: ResolveKey | undefined;
  readonly unknownKey: 'ip' | 'reject';
  readonly unverifiedKeys: 'ip' | 'trust';
  /** The one header whose keys are trusted unverified: set exactly when `unverifiedKeys` is 'trust'. */
  readonly trustedHeader: string | undefined;
  readonly cacheMax: number;
  readonly unknownMax: number;
  readonly ttlMs: number;
  readonly unknownTtlMs: number;
  readonly lookupsPerIp: number;
  readonly lookupWindowMs: number;
  readonly maxInFlight: number;
  readonly timeoutMs: number;
  readonly logger: Pick<Logger, 'warn'>;
  readonly warnings: ReadonlySet<WarningCode>;
  readonly clock: () => number;
}
