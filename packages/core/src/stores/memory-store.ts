// MemoryStore: the embedded default. The algorithms' twins over a bounded LRU, lazy expiry, no timers.
import { LRUCache } from 'lru-cache';
import { evaluateTwins, holdTwins, leaseTwins, refundTwins, settleTwins, TWINS } from '../algorithms/evaluate';
import { ttl } from '../algorithms/twin-math';
import { invalidOption } from '../base/errors';
import { checkOptionNames, clockOption, leaseToken, optionNames, refundAt, wholeNumber } from '../base/validate';
import { lockView, strike, type LockState } from '../model/lockout';
import type { LimitResult, Twin } from '../algorithms/types';
import type { StoreLimit } from '../algorithms/registry';
import type { SettleOutcome, Store, StoreRequest, StoreResult } from './store';
import { ProtectedShare, type HoldKind } from './protected-share';
import { applyOverride } from './override-value';

export interface MemoryStoreOptions {
  /**
   * Most subjects' states kept at once; the least recently used is dropped past it (its count is
   * lost, so keep it above your number of concurrently active callers x limits). Default 100_000.
   */
  maxKeys?: number;
  /**
   * Most states of refused subjects held apart from `maxKeys`, where other callers' traffic cannot
   * evict them: a subject's denying limit states while it is refused, and its lock-out while in
   * force (docs/auth.md#lock-outs-under-a-flood). Full, a new refusal takes the place of the one that
   * ends first if it ends later, and warns once. Default 10_000 (about 3 MB at most, docs/security.md).
   */
  maxProtectedKeys?: number;
  /** The clock in ms. Default `Date.now`. Inject one for deterministic tests and simulations. */
  clock?: () => number;
}

const MEMORY_STORE_OPTION_NAMES = optionNames<MemoryStoreOptions>()(['maxKeys', 'maxProtectedKeys', 'clock']);

interface Entry {
  state: unknown;
  expiresAt: number;
}

export class MemoryStore implements Store {
  readonly name = 'memory';
  /** Never waits on I/O, so the limiter adds no deadline to its calls. */
  readonly timeoutMs = 0;
  private readonly entries: LRUCache<string, Entry>;
  /** Refused subjects' states, out of plain traffic's reach (protected-share.ts). */
  private readonly held: ProtectedShare<Entry>;
  private readonly clock: () => number;
  private readonly warningListeners: ((warning: string) => void)[] = [];
  private overflowed = false;
  /** The last limit consumeOne saw, and its twin. */
  private lastLimit: StoreLimit | undefined;
  private lastTwin: Twin<unknown> | undefined;
  private readonly warningList: string[] = [];
  /** Warnings found so far (a full protected share); read by the health snapshot. */
  readonly warnings: readonly string[] = this.warningList;

  constructor(options: MemoryStoreOptions = {}) {
    if (!options || typeof options !== 'object' || Array.isArray(options)) invalidOption('MemoryStore', options, 'an options object { maxKeys?, maxProtectedKeys?, clock? }');
    checkOptionNames('MemoryStore options', options, MEMORY_STORE_OPTION_NAMES);
    const maxKeys = wholeNumber('maxKeys', options.maxKeys ?? 100_000, 1, 100_000_000);
    const maxProtectedKeys = wholeNumber('maxProtectedKeys', options.maxProtectedKeys ?? 10_000, 1, 100_000_000);
    this.entries = new LRUCache<string, Entry>({ max: maxKeys });
    this.held = new ProtectedShare<Entry>(maxProtectedKeys, (key, entry) => this.entries.set(key, entry), () => this.warnFull(maxProtectedKeys));
    this.clock = clockOption('clock', options.clock) ?? Date.now;
  }

  async evaluate(request: StoreRequest): Promise<StoreResult> {
    return this.evaluateSync(request);
  }

  /** The same decision, synchronously: used where a promise would cost too much (local modes). */
  evaluateSync(request: StoreRequest): StoreResult {
    if (request.mode === 'settle') return this.settle(request);
    const at = request.mode === 'refund' ? refundAt(request.at) : undefined;
    const now = Math.floor(this.clock());
    const { keys, limits, cost } = request;
    if (keys.length === 1 && request.mode === 'consume' && request.override === undefined && request.lockout === undefined && request.token === undefined) {
      return this.consumeOne(keys[0], limits[0], cost, now);
    }
    const states: unknown[] = new Array(keys.length);
    // One key, live: an admission rewrites its entry where it is (below).
    let only: Entry | undefined;
    for (let i = 0; i < keys.length; i++) {
      const entry = this.live(keys[i], now);
      states[i] = entry?.state;
      if (keys.length === 1) only = entry;
    }
    if (request.mode === 'release' || request.mode === 'renew') {
      const { writes, results } = leaseTwins(states, limits, cost, now, leaseToken(request.token), request.mode);
      writes.forEach((write, i) => {
        if (write) this.put(keys[i], { state: write.state, expiresAt: now + write.ttlMs }, now);
      });
      return { at: now, allowed: true, results };
    }
    if (at !== undefined) {
      const { writes, results } = refundTwins(states, limits, cost, now, at);
      writes.forEach((write, i) => {
        if (write === null) this.drop(keys[i]);
        else if (write) this.put(keys[i], { state: write.state, expiresAt: now + write.ttlMs }, now);
      });
      return { at: now, allowed: true, results };
    }
    // Override, as lua/main.lua's: read once, each named limit's cap (and rate) replaced; a cap of 0 refuses until it expires.
    const ov = request.override;
    const holding = request.mode === 'hold';
    const overridden = ov && (request.mode === 'consume' || request.mode === 'peek' || holding) ? this.overridden(request, now) : undefined;
    const twinLimits = overridden ? overridden.limits : limits;
    let { allowed: admitted, checks } = evaluateTwins(states, twinLimits, cost, now, request.token);
    if (overridden) this.zeroCaps(checks, overridden);
    // Shaping (as lua/main.lua's 'h'): a denial a rate limit would lift within maxDelayMs reserves that
    // slot; never under an override of 0, which refuses until it expires.
    let delayMs = 0;
    if (holding && !admitted && !overridden?.caps.some((c) => c === 0)) {
      const held = holdTwins(states, twinLimits, { allowed: admitted, checks }, cost, now, request.maxDelayMs ?? 0);
      if (held) ({ checks, delayMs } = held), (admitted = true);
    }
    const charging = request.mode === 'consume' || holding;
    // Lock-out, as lua/main.lua: a locked subject is denied (nothing charged, no strike); a consume
    // the limits deny is a strike.
    // A refused subject's states go to the protected share for as long as the refusal lasts, where
    // other callers' traffic cannot evict them (docs/auth.md#lock-outs-under-a-flood).
    const refused = !admitted && charging;
    let refusedMs = 0;
    if (refused) {
      for (let i = 0; i < checks.length; i++) {
        if (checks[i].allowed) continue;
        refusedMs = Math.max(refusedMs, checks[i].retryAfterMs);
        this.holdLive(keys[i], now + checks[i].retryAfterMs, 'block', now);
      }
    }
    const lock = request.lockout;
    let lockedMs = 0;
    if (lock) {
      const view = lockView(this.live(lock.key, now)?.state as LockState | undefined, now, lock);
      lockedMs = view.lockedMs;
      if (lockedMs === 0 && refused) {
        const next = strike(view.strikes, now, lock);
        lockedMs = next.lockedMs;
        const hold = lockedMs > 0 ? ({ until: now + lockedMs, kind: 'lock' } as const) : ({ until: now + refusedMs, kind: 'block' } as const);
        this.put(lock.key, { state: next.state, expiresAt: now + next.ttlMs }, now, hold);
      } else if (lockedMs > 0) this.holdLive(lock.key, now + lockedMs, 'lock', now);
    }
    const allowed = admitted && lockedMs === 0;
    // An admission of one limit whose key was live, and no lock-out read since (reading a lock whose
    // hold ended moves it into the LRU, which could evict the entry): the entry read above is still
    // where it was (the most recent in the LRU, or held until its hold ends), so its state is replaced
    // in place, as put() would have: no entry object, no LRU write, no held-share lookup. Several
    // limits: a later key's read could have evicted an earlier one's entry (maxKeys below the
    // limits), so they go through put().
    const inPlace = only !== undefined && !lock;
    const results: LimitResult[] = new Array(checks.length);
    for (let i = 0; i < checks.length; i++) {
      const check = checks[i];
      if (allowed && charging && check.next) {
        if (inPlace) {
          // The state's fields too, where its twin can (no new object for the collector to keep).
          const assign = only!.state === undefined ? undefined : TWINS[limits[i].algorithm].assign;
          if (assign !== undefined) assign(only!.state, check.next.state);
          else only!.state = check.next.state;
          only!.expiresAt = now + check.next.ttlMs;
        } else this.put(keys[i], { state: check.next.state, expiresAt: now + check.next.ttlMs }, now);
      }
      results[i] = overridden
        ? { allowed: check.allowed, remaining: check.remaining, resetMs: check.resetMs, retryAfterMs: check.retryAfterMs, limit: overridden.caps[i] }
        : { allowed: check.allowed, remaining: check.remaining, resetMs: check.resetMs, retryAfterMs: check.retryAfterMs };
    }
    if (allowed && delayMs > 0) return { at: now, allowed, results, delayMs };
    return lockedMs > 0 ? { at: now, allowed, results, lockedMs } : { at: now, allowed, results };
  }

  /**
   * The common decision: a consume of one limit with no override, lock-out or lease token. The
   * steps of evaluateSync below for that case (read, check, write in place or hold the refusal),
   * without its per-request arrays (states, checks) and twin lookups by name: every decision of a
   * single-limit route on the memory store runs it.
   */
  private consumeOne(key: string, limit: StoreLimit, cost: number, now: number): StoreResult {
    const entry = this.live(key, now);
    const twin = this.twinOf(limit);
    const check = twin.check(entry?.state, now, limit, cost, undefined);
    const next = check.next;
    if (!check.allowed) this.holdLive(key, now + check.retryAfterMs, 'block', now);
    else if (next !== undefined) {
      if (entry === undefined) this.put(key, { state: next.state, expiresAt: now + next.ttlMs }, now);
      else {
        // In place, as evaluateSync's one live key: the entry read above is still where it was.
        if (entry.state !== undefined && twin.assign !== undefined) twin.assign(entry.state, next.state);
        else entry.state = next.state;
        entry.expiresAt = now + next.ttlMs;
      }
    }
    const results: LimitResult[] = [{ allowed: check.allowed, remaining: check.remaining, resetMs: check.resetMs, retryAfterMs: check.retryAfterMs }];
    return { at: now, allowed: check.allowed, results };
  }

  /** A limit's twin, found by name once per limits the store is asked with (a limiter sends the same ones every time). */
  private twinOf(limit: StoreLimit): Twin<unknown> {
    if (limit !== this.lastLimit) {
      this.lastLimit = limit;
      this.lastTwin = TWINS[limit.algorithm];
    }
    return this.lastTwin!;
  }

  /** The request's limits under its subject's override (none stored: as they are), and the ms the override has left. */
  private overridden(request: StoreRequest, now: number): ReturnType<typeof applyOverride> & { leftMs: number } {
    const ov = request.override!;
    const entry = this.live(ov.key, now);
    const applied = applyOverride(entry?.state as string | undefined, request.keys, ov.key, request.limits, ov.ceiling);
    return { ...applied, leftMs: entry ? Math.max(1, entry.expiresAt - now) : 0 };
  }

  /** A limit overridden to 0 refuses, its state untouched: remaining 0, reset and retry when the override expires (main.lua's). */
  private zeroCaps(checks: { allowed: boolean; remaining: number; resetMs: number; retryAfterMs: number; next?: unknown }[], o: { caps: number[]; leftMs: number }): void {
    for (let i = 0; i < checks.length; i++) {
      if (o.caps[i] !== 0) continue;
      checks[i] = { allowed: false, remaining: 0, resetMs: o.leftMs, retryAfterMs: o.leftMs };
    }
  }

  /**
   * Writes a subject's override (a string, main.lua's format) for `ttlMs`, by this store's clock, and
   * its record in the prefix's index (`index`: key, field, record; kept until the override expires).
   */
  async putOverride(key: string, value: string, ttlMs: number, index: { key: string; field: string; record: string }): Promise<void> {
    const now = Math.floor(this.clock());
    this.put(key, { state: value, expiresAt: now + ttlMs }, now);
    const held = this.live(index.key, now);
    const map = (held?.state as Map<string, { record: string; until: number }> | undefined) ?? new Map<string, { record: string; until: number }>();
    for (const [f, r] of map) if (r.until <= now) map.delete(f);
    map.set(index.field, { record: index.record, until: now + ttlMs });
    const until = Math.max(now + ttlMs, held?.expiresAt ?? 0);
    this.put(index.key, { state: map, expiresAt: until }, now);
  }

  /** Deletes a subject's override and its index record. */
  async dropOverride(key: string, index: { key: string; field: string }): Promise<void> {
    this.drop(key);
    const held = this.live(index.key, Math.floor(this.clock()));
    (held?.state as Map<string, unknown> | undefined)?.delete(index.field);
  }

  /** The records of the prefix's index whose override has not expired. */
  async listOverrides(indexKey: string): Promise<string[]> {
    const now = Math.floor(this.clock());
    const map = this.live(indexKey, now)?.state as Map<string, { record: string; until: number }> | undefined;
    if (!map) return [];
    return [...map.values()].filter((r) => r.until > now).map((r) => r.record);
  }

  /** A broad override: a field of the hash at `key` (a Map here), with its end. */
  async putBroad(key: string, field: string, value: Record<string, unknown>, ttlMs: number): Promise<void> {
    const now = Math.floor(this.clock());
    const held = this.live(key, now);
    const map = (held?.state as Map<string, string> | undefined) ?? new Map<string, string>();
    map.set(field, JSON.stringify({ ...value, until: now + ttlMs }));
    this.put(key, { state: map, expiresAt: Math.max(now + ttlMs, held?.expiresAt ?? 0) }, now);
  }

  async dropBroad(key: string, field: string): Promise<void> {
    (this.live(key, Math.floor(this.clock()))?.state as Map<string, string> | undefined)?.delete(field);
  }

  async readBroad(key: string): Promise<{ now: number; fields: Record<string, string> }> {
    const now = Math.floor(this.clock());
    const map = this.live(key, now)?.state as Map<string, string> | undefined;
    return { now, fields: map ? Object.fromEntries(map) : {} };
  }

  /** Mode 'settle', as lua/main.lua's 's': the record of settled tokens first, then the limits. */
  private settle(request: StoreRequest): StoreResult {
    const at = refundAt(request.at);
    const token = leaseToken(request.token);
    const settle = request.settle;
    if (!settle) throw new Error('a settle request carries `settle`');
    const now = Math.floor(this.clock());
    const { keys, limits } = request;
    const states: unknown[] = keys.map((key) => this.live(key, now)?.state);
    // The record: token -> ms its record expires (the script's ZSET).
    const record = (this.live(settle.key, now)?.state as Map<string, number> | undefined) ?? new Map<string, number>();
    const seen = record.get(token);
    let outcome: SettleOutcome = 'settled';
    if (seen !== undefined && seen > now) outcome = 'already-settled';
    else if (now - at >= settle.withinMs) outcome = 'expired';
    if (outcome !== 'settled') {
      const { results } = settleTwins(states, limits, 0, now, at);
      return { at: now, allowed: false, results, settled: outcome };
    }
    for (const [t, until] of record) if (until <= now) record.delete(t);
    record.set(token, at + settle.withinMs);
    this.put(settle.key, { state: record, expiresAt: now + ttl(settle.withinMs) }, now);
    const { writes, results } = settleTwins(states, limits, settle.actual - request.cost, now, at);
    writes.forEach((write, i) => {
      if (write === null) this.drop(keys[i]);
      else if (write) this.put(keys[i], { state: write.state, expiresAt: now + write.ttlMs }, now);
    });
    return { at: now, allowed: true, results, settled: outcome };
  }

  /**
   * A key's entry, or undefined when absent or expired (then dropped). Reading it makes it the most
   * recently used; a protected entry whose hold has ended goes back to the plain LRU.
   */
  private live(key: string, now: number): Entry | undefined {
    const held = this.held.get(key);
    if (held) {
      if (held.entry.expiresAt <= now) {
        this.held.delete(key);
        return undefined;
      }
      if (held.until <= now) {
        this.held.delete(key);
        this.entries.set(key, held.entry);
      }
      return held.entry;
    }
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAt <= now) {
      this.entries.delete(key);
      return undefined;
    }
    return entry;
  }

  /**
   * Writes a key's entry: to the protected share when `hold` ends later than now (or while a hold
   * on it lasts), else to the plain LRU. A full share that refuses the hold leaves it in the plain LRU.
   */
  private put(key: string, entry: Entry, now: number, hold?: { until: number; kind: HoldKind }): void {
    if (hold && hold.until > now && this.held.hold(key, entry, Math.min(hold.until, entry.expiresAt), hold.kind, now)) {
      this.entries.delete(key);
      return;
    }
    const held = this.held.get(key);
    if (held && held.until > now) {
      held.entry = entry;
      return;
    }
    if (held) this.held.delete(key);
    this.entries.set(key, entry);
  }

  /** Holds a key's live entry, if it has one, until `until` (its refusal's end). */
  private holdLive(key: string, until: number, kind: HoldKind, now: number): void {
    const entry = this.live(key, now);
    if (entry) this.put(key, entry, now, { until, kind });
  }

  private drop(key: string): void {
    this.held.delete(key);
    this.entries.delete(key);
  }

  /** Once per store: the protected share was full and a refusal lost its place or found none. */
  private warnFull(max: number): void {
    if (this.overflowed) return;
    this.overflowed = true;
    const warning = `MemoryStore: the protected share is full (maxProtectedKeys ${max}): a refused or locked-out subject's state was left where other callers' traffic can evict it; raise maxProtectedKeys (docs/auth.md#lock-outs-under-a-flood)`;
    this.warningList.push(warning);
    for (const listener of this.warningListeners) listener(warning);
  }

  /** Calls `listener` with each warning found after construction (a full protected share); the limiter logs each once. */
  onWarning(listener: (warning: string) => void): void {
    this.warningListeners.push(listener);
  }

  async reset(keys: readonly string[]): Promise<void> {
    for (const key of keys) this.drop(key);
  }

  /** How many subjects' states are held now (expired ones may still count until read). */
  get size(): number {
    return this.entries.size + this.held.size;
  }
}
