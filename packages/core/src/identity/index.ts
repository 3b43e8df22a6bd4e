// Who is one caller: API key first (hashed), else the client IP (IPv4-mapped -> IPv4, IPv6 -> its /64).
import { parseDuration, type Duration } from '../duration';
import { invalidOption } from '../errors';
import type { ResolvedLimit } from '../limit';
import type { LimitOptions } from '../options';
import type { Logger } from '../logger';
import { checkOptionNames, oneOf, optionNames, optionsObject, wholeNumber } from '../validate';
import { resolveWarnings, warnOnce, type WarningCode, type WarningSwitches } from '../warnings';
import { findApiKey, type Headers } from './api-key';
import { ipSubject } from './ip';
import { KeyCache, type KeyRecord, type ResolveKey } from './key-cache';

export type { ResolveKey, ResolvedKey } from './key-cache';

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
   * How the framework's trust-proxy setting makes `ip`: 'none' (the socket's peer; proxy headers
   * are ignored), 'some' (a hop count or a list of proxies), 'all' (every proxy is trusted: `ip` is
   * the first X-Forwarded-For entry, which the client writes). Undefined: not known, not checked.
   * Read for the FG_PROXY_HEADER_UNTRUSTED and FG_TRUST_PROXY_ALL warnings only.
   */
  readonly trustProxy?: 'none' | 'some' | 'all';
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
   * `unverifiedKeys: 'trust'`). Default ['authorization', 'x-api-key']; false to key on IP only.
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
   * invented key never buys a fresh budget. 'trust' keys each distinct key on its own bucket: only
   * for an app whose keys were already verified upstream (an API gateway that rejects unknown
   * keys), since otherwise every invented key is a new, full budget. Not with `resolveKey`.
   */
  unverifiedKeys?: 'ip' | 'trust';
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
     * Lookups of keys never seen before, per client IP (per IPv6 /64) per `lookupWindowMs`. Past
     * it, an unseen key from that IP is treated as unknown without a lookup (limited by IP, or 401
     * with `unknownKey: 'reject'`), so a client rotating invented keys costs at most this many
     * lookups. Keys already cached are not counted. Default 10.
     */
    lookupsPerIp?: number;
    /** The window of `lookupsPerIp`. Default '1m'. */
    lookupWindowMs?: Duration;
  };
  /** Longest wait for one `resolveKey` answer; past it the request goes on without it (the lookup still completes and is cached). Default '1s'. */
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
   * failed or timed out, and no earlier answer was cached).
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

/** Most client addresses whose identity one identify function remembers. */
const IP_MEMO_MAX = 10_000;

/** The one bucket shared by every request without a usable client IP. */
export const UNKNOWN_IP_SUBJECT = 'ip:unknown';

const DEFAULT_HEADERS = ['authorization', 'x-api-key'];
// RFC 9110 token characters: what a header name may contain.
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,64}$/;
/** Headers only a proxy should write: seen while the framework trusts none, they are a sign of a proxy it ignores. */
const PROXY_HEADERS = ['x-forwarded-for', 'forwarded', 'x-real-ip'] as const;

/** Identity options after parsing: what `identifyFrom` builds on. */
export interface ResolvedIdentityOptions {
  readonly headers: readonly string[];
  readonly ipv6Subnet: number;
  readonly maxApiKeyLength: number;
  readonly resolveKey: ResolveKey | undefined;
  readonly unknownKey: 'ip' | 'reject';
  readonly unverifiedKeys: 'ip' | 'trust';
  readonly cacheMax: number;
  readonly unknownMax: number;
  readonly ttlMs: number;
  readonly unknownTtlMs: number;
  readonly lookupsPerIp: number;
  readonly lookupWindowMs: number;
  readonly timeoutMs: number;
  readonly logger: Pick<Logger, 'warn'>;
  readonly warnings: ReadonlySet<WarningCode>;
  readonly clock: () => number;
}

/** The names of every identity option. */
export const IDENTITY_OPTION_NAMES = optionNames<IdentityOptions>()([
  'apiKeyHeaders',
  'ipv6Subnet',
  'maxApiKeyLength',
  'resolveKey',
  'unverifiedKeys',
  'unknownKey',
  'keyCache',
  'resolveTimeoutMs',
  'logger',
  'warnings',
  'clock',
]);
const KEY_CACHE_OPTION_NAMES = optionNames<NonNullable<IdentityOptions['keyCache']>>()([
  'max',
  'unknownMax',
  'ttlMs',
  'unknownTtlMs',
  'lookupsPerIp',
  'lookupWindowMs',
]);

/**
 * Parses identity options once, at construction; throws FG_INVALID_OPTION naming the bad one, or
 * FG_UNKNOWN_OPTION for a name it does not know (`checkNames: false` when the caller checked them).
 */
export function resolveIdentityOptions(options: IdentityOptions = {}, checkNames = true): ResolvedIdentityOptions {
  if (!options || typeof options !== 'object') invalidOption('identity options', options, 'an object');
  if (checkNames) checkOptionNames('identity options', options, IDENTITY_OPTION_NAMES);
  const rawHeaders = options.apiKeyHeaders ?? DEFAULT_HEADERS;
  let headers: string[] = [];
  if (rawHeaders !== false) {
    if (!Array.isArray(rawHeaders) || rawHeaders.length > 16) {
      invalidOption('apiKeyHeaders', rawHeaders, 'false or an array of up to 16 header names');
    }
    headers = rawHeaders.map((name, i) => {
      if (typeof name !== 'string' || !HEADER_NAME.test(name)) {
        invalidOption(`apiKeyHeaders[${i}]`, name, 'a header name (RFC 9110 token characters, 1 to 64)');
      }
      // Adapters hand over Node's headers, whose names are lower case.
      return name.toLowerCase();
    });
  }
  const resolveKey = options.resolveKey;
  if (resolveKey !== undefined && typeof resolveKey !== 'function') {
    invalidOption('resolveKey', resolveKey, 'a function (apiKey) => { account, limits? } | null, or a promise of it');
  }
  const unknownKey = oneOf('unknownKey', options.unknownKey, ['ip', 'reject'], 'ip');
  if (options.unknownKey !== undefined && resolveKey === undefined) {
    // Without a lookup no key is ever unknown: the setting would silently do nothing.
    invalidOption('unknownKey', options.unknownKey, 'to be set only together with `resolveKey`');
  }
  const unverifiedKeys = oneOf('unverifiedKeys', options.unverifiedKeys, ['ip', 'trust'], 'ip');
  if (options.unverifiedKeys !== undefined && resolveKey !== undefined) {
    // With a lookup every key is verified: the setting would silently do nothing.
    invalidOption('unverifiedKeys', options.unverifiedKeys, 'to be set only without `resolveKey` (keys it answers are verified)');
  }
  const cache = optionsObject('keyCache', options.keyCache, 'an object { max?, unknownMax?, ttlMs?, unknownTtlMs?, lookupsPerIp?, lookupWindowMs? }');
  checkOptionNames('keyCache', cache, KEY_CACHE_OPTION_NAMES);
  const logger = options.logger ?? console;
  if (!logger || typeof logger.warn !== 'function') {
    invalidOption('logger', options.logger, 'an object with a warn(message) method, such as console');
  }
  const warnings = resolveWarnings(options.warnings);
  const clock = options.clock ?? (() => performance.now());
  if (typeof clock !== 'function') invalidOption('clock', clock, 'a function returning monotonic ms');
  return {
    headers,
    ipv6Subnet: wholeNumber('ipv6Subnet', options.ipv6Subnet ?? 64, 1, 128),
    maxApiKeyLength: wholeNumber('maxApiKeyLength', options.maxApiKeyLength ?? 4096, 1, 16_384),
    resolveKey,
    unknownKey,
    unverifiedKeys,
    cacheMax: wholeNumber('keyCache.max', cache.max ?? 10_000, 1, 10_000_000),
    unknownMax: wholeNumber('keyCache.unknownMax', cache.unknownMax ?? 10_000, 1, 10_000_000),
    ttlMs: parseDuration('keyCache.ttlMs', cache.ttlMs ?? 60_000, 1, 86_400_000),
    unknownTtlMs: parseDuration('keyCache.unknownTtlMs', cache.unknownTtlMs ?? 10_000, 1, 86_400_000),
    lookupsPerIp: wholeNumber('keyCache.lookupsPerIp', cache.lookupsPerIp ?? 10, 0, 1_000_000),
    lookupWindowMs: parseDuration('keyCache.lookupWindowMs', cache.lookupWindowMs ?? 60_000, 1, 86_400_000),
    timeoutMs: parseDuration('resolveTimeoutMs', options.resolveTimeoutMs ?? 1_000, 1, 60_000),
    logger,
    warnings,
    clock,
  };
}

/** A short, printable sample of a hostile value for a log line. */
function sample(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value.slice(0, 64)) + (value.length > 64 ? '...' : '') : typeof value;
}

/** Builds the identify function once from options parsed once (see `identifyFrom`). */
export function createIdentify(options: IdentityOptions = {}): Identify {
  return identifyFrom(resolveIdentityOptions(options));
}

/**
 * The identify function for parsed options. Cheapest first: header scan and digest, IP parse, a
 * fresh cached key answer (all local); then `hooks.isBlocked`; then the client IP's lookup budget;
 * only then a `resolveKey` lookup. `onKeyCache` receives the key cache's counts (for metrics and health). A key that is not verified never escapes its client IP's bucket.
 * It returns synchronously unless it has to wait for a lookup, and never throws or rejects for
 * anything a request carries.
 */
export function identifyFrom(o: ResolvedIdentityOptions, onKeyCache?: (stats: KeyCache['stats']) => void): Identify {
  const warned = new Set<IdentityWarning>();
  let lookupsFailing = false;

  function warn(code: IdentityWarning, message: string, detail?: unknown): void {
    if (!o.warnings.has(code) || warned.has(code)) return;
    warned.add(code);
    const line = `[floodgate] ${code}: ${message} (see docs/identity.md; written once)`;
    try {
      if (detail === undefined) o.logger.warn(line);
      else o.logger.warn(line, { error: detail });
    } catch {
      // A broken logger must not break requests.
    }
  }

  const cache = o.resolveKey
    ? new KeyCache({
        resolveKey: o.resolveKey,
        max: o.cacheMax,
        unknownMax: o.unknownMax,
        ttlMs: o.ttlMs,
        unknownTtlMs: o.unknownTtlMs,
        timeoutMs: o.timeoutMs,
        lookupsPerIp: o.lookupsPerIp,
        lookupWindowMs: o.lookupWindowMs,
        clock: o.clock,
        onBadPlan: (error) =>
          warn('FG_RESOLVE_KEY_BAD_PLAN', 'resolveKey returned limits the limiter rejects; that key gets the route limits.', error),
      })
    : undefined;
  if (cache) onKeyCache?.(cache.stats);

  // The same clients come back request after request: each address's identity is parsed once
  // (bounded: past IP_MEMO_MAX addresses, start over; a miss only costs one parse).
  const ipMemo = new Map<string, Identity>();
  function byIp(ip: unknown): Identity {
    if (typeof ip === 'string') {
      const hit = ipMemo.get(ip);
      if (hit !== undefined) return hit;
    }
    const found = ipSubject(ip, o.ipv6Subnet);
    if (found.ok) {
      const identity: Identity = Object.freeze({ subject: found.subject, kind: 'ip' as const });
      if (ipMemo.size >= IP_MEMO_MAX) ipMemo.clear();
      ipMemo.set(ip as string, identity);
      return identity;
    }
    if (found.problem === 'missing') {
      warn('FG_IP_MISSING', `a request had no client IP; such requests share the bucket '${UNKNOWN_IP_SUBJECT}'. Check how the app is served and its trust-proxy setting.`);
    } else {
      warn('FG_IP_MALFORMED', `the framework reported ${sample(ip)} as the client IP; such requests share the bucket '${UNKNOWN_IP_SUBJECT}'. Check the trust-proxy setting.`);
    }
    return { subject: UNKNOWN_IP_SUBJECT, kind: 'unknown' };
  }

  /** Who the caller is for this answer: a known key is its own bucket; anything else is its client IP's. */
  function fromRecord(record: KeyRecord, subject: string, ip: unknown, status: 'unknown' | 'unchecked' = 'unknown'): Identity {
    if (record.known) {
      return record.limits
        ? { subject, kind: 'api-key', account: record.account, limits: record.limits, resolvedLimits: record.resolvedLimits, plan: record.plan, keyStatus: 'known' }
        : { subject, kind: 'api-key', account: record.account, keyStatus: 'known' };
    }
    const own = byIp(ip);
    return o.unknownKey === 'reject' ? { ...own, keyStatus: status, rejected: 'unknown-key' } : { ...own, keyStatus: status };
  }

  // The trust-proxy checks: each runs until it has been through the logger once (or never, when
  // switched off); until then they cost a comparison, and a few header reads with trust proxy off.
  let trustAllOpen = o.warnings.has('FG_TRUST_PROXY_ALL');
  let proxyHeaderOpen = o.warnings.has('FG_PROXY_HEADER_UNTRUSTED');
  function checkProxy(facts: RequestFacts): void {
    if (facts.trustProxy === 'all' && trustAllOpen) {
      trustAllOpen = false;
      warnOnce(
        o.logger,
        o.warnings,
        'FG_TRUST_PROXY_ALL',
        "the framework trusts every proxy (Express 'trust proxy' true, Fastify trustProxy: true, Koa app.proxy without app.maxIpsCount), so the client IP is the first X-Forwarded-For entry, which any client writes: a client can get a fresh bucket per request. Trust only the hops you run: a hop count (1 for one proxy) or your proxies' addresses (docs/identity.md#trusting-a-proxy-per-framework)",
      );
    } else if (facts.trustProxy === 'none' && proxyHeaderOpen) {
      const headers = facts.headers;
      const seen = headers && PROXY_HEADERS.find((name) => headers[name] !== undefined);
      if (!seen) return;
      proxyHeaderOpen = false;
      warnOnce(
        o.logger,
        o.warnings,
        'FG_PROXY_HEADER_UNTRUSTED',
        `a request carried ${seen} but the framework trusts no proxy, so the client IP is the peer's address: behind a proxy you run, every caller shares its one bucket. If a proxy you run sets ${seen}, trust it (Express app.set('trust proxy', 1), Fastify trustProxy: 1, Koa app.proxy = true with app.maxIpsCount = 1); if no proxy is in front, a client wrote it and ignoring it is right (docs/identity.md#trusting-a-proxy-per-framework)`,
      );
    }
  }

  return function identify(facts: RequestFacts, hooks?: IdentifyHooks): Identity | Promise<Identity> {
    if ((trustAllOpen || proxyHeaderOpen) && facts?.trustProxy !== undefined) checkProxy(facts);
    const ip = facts?.ip;
    const key = o.headers.length > 0 ? findApiKey(facts?.headers, o.headers, o.maxApiKeyLength) : undefined;
    if (!key?.found) return byIp(ip);
    const subject = `key:${key.digest}`;
    if (!cache) {
      // Nothing can verify the key: it names nobody, so it must not buy a budget of its own.
      return o.unverifiedKeys === 'trust' ? { subject, kind: 'api-key', keyStatus: 'unverified' } : { ...byIp(ip), keyStatus: 'unverified' };
    }
    if (key.tooLong) {
      warn('FG_API_KEY_TOO_LONG', `a request carried an API key longer than maxApiKeyLength (${o.maxApiKeyLength}); it is treated as unknown.`);
      return fromRecord({ known: false }, subject, ip);
    }
    const fresh = cache.fresh(key.digest);
    if (fresh) return fromRecord(fresh, subject, ip);

    // A lookup would follow. A caller already denied is answered from the block cache, so ask
    // first, with the identity its last answer predicts (a key never seen: its client IP, which is
    // what an unknown key gets), and skip the lookup if that identity is blocked.
    const last = cache.last(key.digest);
    const predicted = fromRecord(last ?? { known: false }, subject, ip, last ? 'unknown' : 'unchecked');
    if (hooks?.isBlocked) {
      // A rejected key is counted against its IP too: when that is blocked, the answer is its 429.
      const counted: Identity = predicted.rejected ? { subject: predicted.subject, kind: predicted.kind, keyStatus: 'unchecked' } : predicted;
      if (hooks.isBlocked(counted)) return counted;
    }
    // A key never seen spends one of its IP's lookups; past the budget it is not looked up at all.
    if (!last && !cache.pending(key.digest) && !cache.spendLookup(predicted.subject)) return predicted;

    return cache.lookup(key.digest, key.key).then((outcome) => {
      if (outcome.ok) {
        lookupsFailing = false;
        return fromRecord(outcome.record, subject, ip);
      }
      if (!lookupsFailing) {
        lookupsFailing = true;
        warned.delete('FG_RESOLVE_KEY_FAILED'); // once per outage, not once per process
        warn(
          'FG_RESOLVE_KEY_FAILED',
          outcome.why === 'timeout'
            ? `resolveKey took longer than resolveTimeoutMs (${o.timeoutMs} ms); requests use the last cached answer, else their IP.`
            : 'resolveKey failed; requests use the last cached answer, else their IP.',
          outcome.why === 'error' ? outcome.error : undefined,
        );
      }
      // Serve the last answer, even expired, over none: an outage should not change who a caller is.
      const stale = cache.last(key.digest);
      return stale ? fromRecord(stale, subject, ip) : { ...byIp(ip), keyStatus: 'lookup-failed' as const };
    });
  };
}
