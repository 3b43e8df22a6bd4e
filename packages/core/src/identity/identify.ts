// identify: who one caller is. API key first (hashed, verified by resolveKey), else the client IP (IPv4-mapped -> IPv4, IPv6 -> its /64).
import { Memo } from '../base/memo';
import { findApiKey } from './api-key';
import { ipSubject } from './ip';
import { KeyCache, type KeyRecord, type LookupOutcome } from './key-cache';
import { resolveIdentityOptions } from './options';
import type { Identify, IdentifyHooks, Identity, IdentityOptions, IdentityWarning, RequestFacts, ResolvedIdentityOptions } from './types';
import { ProxyChecks } from './proxy-warnings';

/** Client addresses whose identity one identify function remembers, per generation (base/memo.ts: at most twice this). */
const IP_MEMO_MAX = 10_000;

/** The answer when keyCache.maxInFlight lookups are in flight. */
const SATURATED = Object.freeze({ ok: false, why: 'saturated' }) as Extract<LookupOutcome, { ok: false }>;

/** The one bucket shared by every request without a usable client IP. */
export const UNKNOWN_IP_SUBJECT = 'ip:unknown';

/** A short, printable sample of a hostile value for a log line. */
function sample(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value.slice(0, 64)) + (value.length > 64 ? '...' : '') : typeof value;
}

/** Builds the identify function once from options parsed once (see `identifyFrom`). */
export function createIdentify(options: IdentityOptions = {}): Identify {
  return identifyFrom(resolveIdentityOptions(options));
}

/**
 * Identity's warnings: each written once (a lookup failure once per outage, see `rearm`), each
 * switched off by name, and never through a broken logger's exception.
 */
class Warnings {
  private readonly written = new Set<IdentityWarning>();
  constructor(private readonly o: ResolvedIdentityOptions) {}

  warn(code: IdentityWarning, message: string, detail?: unknown): void {
    if (!this.o.warnings.has(code) || this.written.has(code)) return;
    this.written.add(code);
    const line = `[floodgate] ${code}: ${message} (see docs/identity.md; written once)`;
    try {
      if (detail === undefined) this.o.logger.warn(line);
      else this.o.logger.warn(line, { error: detail });
    } catch {
      // A broken logger must not break requests.
    }
  }

  /** Lets `code` be written again (the next outage's first failure). */
  rearm(code: IdentityWarning): void {
    this.written.delete(code);
  }
}

/**
 * Each client address's identity, parsed once (the same clients come back request after request;
 * bounded: a miss only costs one parse). An address that is missing or malformed is limited in the
 * shared UNKNOWN_IP_SUBJECT bucket, with a warning.
 */
function ipIdentities(o: ResolvedIdentityOptions, warnings: Warnings): (ip: unknown) => Identity {
  const memo = new Memo<Identity>(IP_MEMO_MAX);
  return (ip) => {
    if (typeof ip === 'string') {
      const hit = memo.get(ip);
      if (hit !== undefined) return hit;
    }
    const found = ipSubject(ip, o.ipv6Subnet);
    if (found.ok) {
      const identity: Identity = Object.freeze({ subject: found.subject, kind: 'ip' as const });
      memo.set(ip as string, identity);
      return identity;
    }
    if (found.problem === 'missing') {
      warnings.warn('FG_IP_MISSING', `a request had no client IP; such requests share the bucket '${UNKNOWN_IP_SUBJECT}'. Check how the app is served and its trust-proxy setting.`);
    } else {
      warnings.warn('FG_IP_MALFORMED', `the framework reported ${sample(ip)} as the client IP; such requests share the bucket '${UNKNOWN_IP_SUBJECT}'. Check the trust-proxy setting.`);
    }
    return { subject: UNKNOWN_IP_SUBJECT, kind: 'unknown' };
  };
}

/** Lookup failures, written once per outage (see `Warnings.rearm`): the first failure after a success. */
class LookupOutage {
  private failing = false;
  constructor(
    private readonly o: ResolvedIdentityOptions,
    private readonly warnings: Warnings,
  ) {}

  failed(outcome: Extract<LookupOutcome, { ok: false }>): void {
    if (this.failing) return;
    this.failing = true;
    this.warnings.rearm('FG_RESOLVE_KEY_FAILED'); // once per outage, not once per process
    const why =
      outcome.why === 'timeout'
        ? `resolveKey took longer than resolveTimeoutMs (${this.o.timeoutMs} ms)`
        : outcome.why === 'saturated'
          ? `keyCache.maxInFlight (${this.o.maxInFlight}) lookups were in flight at once`
          : 'resolveKey failed';
    this.warnings.warn('FG_RESOLVE_KEY_FAILED', `${why}; requests use the last cached answer, else their IP.`, outcome.why === 'error' ? outcome.error : undefined);
  }

  recovered(): void {
    this.failing = false;
  }
}

/**
 * Without `resolveKey`: only a key in the header `unverifiedKeys: { trust }` names is a caller of
 * its own (a gateway in front verified that one header); a key in any other header names nobody,
 * so it must not buy a budget: the request is its client IP's.
 */
function unverified(o: ResolvedIdentityOptions, byIp: (ip: unknown) => Identity, facts: RequestFacts, ip: unknown): Identity {
  if (o.trustedHeader !== undefined) {
    const trusted = findApiKey(facts.headers, [o.trustedHeader], o.maxApiKeyLength);
    if (trusted.found) return { subject: `key:${trusted.digest}`, kind: 'api-key', keyStatus: 'unverified' };
  }
  return { ...byIp(ip), keyStatus: 'unverified' };
}

/** The `resolveKey` cache of these options (none without resolveKey). */
function keyCacheOf(o: ResolvedIdentityOptions, warnings: Warnings): KeyCache | undefined {
  if (!o.resolveKey) return undefined;
  return new KeyCache({
    resolveKey: o.resolveKey,
    max: o.cacheMax,
    unknownMax: o.unknownMax,
    ttlMs: o.ttlMs,
    unknownTtlMs: o.unknownTtlMs,
    timeoutMs: o.timeoutMs,
    maxInFlight: o.maxInFlight,
    lookupsPerIp: o.lookupsPerIp,
    lookupWindowMs: o.lookupWindowMs,
    clock: o.clock,
    onBadPlan: (error) => warnings.warn('FG_RESOLVE_KEY_BAD_PLAN', 'resolveKey returned limits the limiter rejects; that key gets the route limits.', error),
  });
}

/**
 * The identify function for parsed options. Cheapest first: header scan and digest, IP parse, a
 * fresh cached key answer (all local); then `hooks.isBlocked`; then the client IP's lookup budget;
 * only then a `resolveKey` lookup. `onKeyCache` receives the key cache's counts (for metrics and
 * health). A key that is not verified never escapes its client IP's bucket. It returns
 * synchronously unless it has to wait for a lookup, and never throws or rejects for anything a
 * request carries.
 */
export function identifyFrom(o: ResolvedIdentityOptions, onKeyCache?: (stats: KeyCache['stats']) => void): Identify {
  const warnings = new Warnings(o);
  const byIp = ipIdentities(o, warnings);
  const cache = keyCacheOf(o, warnings);
  if (cache) onKeyCache?.(cache.stats);
  const proxy = new ProxyChecks(o);
  const outage = new LookupOutage(o, warnings);

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

  /** A failed, late or refused lookup: the last answer, even expired, over none (an outage should not change who a caller is). */
  function withoutLookup(outcome: Extract<LookupOutcome, { ok: false }>, digest: string, subject: string, ip: unknown): Identity {
    outage.failed(outcome);
    const stale = cache!.last(digest);
    return stale ? fromRecord(stale, subject, ip) : { ...byIp(ip), keyStatus: 'lookup-failed' };
  }

  return function identify(facts: RequestFacts, hooks?: IdentifyHooks): Identity | Promise<Identity> {
    if (proxy.open && facts?.trustProxy !== undefined) proxy.check(facts);
    const ip = facts?.ip;
    const key = o.headers.length > 0 ? findApiKey(facts?.headers, o.headers, o.maxApiKeyLength) : undefined;
    if (!key?.found) return byIp(ip);
    const subject = `key:${key.digest}`;
    if (!cache) return unverified(o, byIp, facts, ip);
    if (key.tooLong) {
      warnings.warn('FG_API_KEY_TOO_LONG', `a request carried an API key longer than maxApiKeyLength (${o.maxApiKeyLength}); it is treated as unknown.`);
      cache.spendLookup(byIp(ip).subject); // an unknown key's answer, like a cached one
      return fromRecord({ known: false }, subject, ip);
    }
    const fresh = cache.fresh(key.digest);
    if (fresh) {
      // A key answered unknown spends its IP's budget as a lookup would: repeating known-bad keys is
      // limited like inventing new ones. A known key's answer is free (nobody can invent one).
      if (!fresh.known) cache.spendLookup(byIp(ip).subject);
      return fromRecord(fresh, subject, ip);
    }

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
    if (!cache.pending(key.digest)) {
      // Lookups in flight are bounded: past the bound, answered as a failed lookup would be, at once.
      if (cache.full()) return (cache.refused(), withoutLookup(SATURATED, key.digest, subject, ip));
      // Every lookup of a key not known to be verified spends one of its IP's lookups (the refresh of
      // a known key does not: one per key per keyCache.ttlMs, and a revocation must not wait on it).
      if (!last?.known && !cache.spendLookup(byIp(ip).subject)) return predicted;
    }

    return cache.lookup(key.digest, key.key).then((outcome) => {
      if (!outcome.ok) return withoutLookup(outcome, key.digest, subject, ip);
      outage.recovered();
      return fromRecord(outcome.record, subject, ip);
    });
  };
}
