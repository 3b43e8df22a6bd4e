// MemoryStore: the embedded default. The algorithms' twins over a bounded LRU, lazy expiry, no timers.
import { LRUCache } from 'lru-cache';
import { evaluateTwins, leaseTwins, refundTwins, settleTwins } from '../algorithms/evaluate';
import { ttl } from '../algorithms/twin-math';
import { invalidOption } from '../errors';
import { checkOptionNames, clockOption, leaseToken, optionNames, refundAt, wholeNumber } from '../validate';
import { lockView, strike, type LockState } from '../lockout';
import type { LimitResult } from '../algorithms/types';
import type { SettleOutcome, Store, StoreRequest, StoreResult } from './store';

export interface MemoryStoreOptions {
  /**
   * Most subjects' states kept at once; the least recently used is dropped past it (its count is
   * lost, so keep it above your number of concurrently active callers x limits). Default 100_000.
   */
  maxKeys?: number;
  /** The clock in ms. Default `Date.now`. Inject one for deterministic tests and simulations. */
  clock?: () => number;
}

const MEMORY_STORE_OPTION_NAMES = optionNames<MemoryStoreOptions>()(['maxKeys', 'clock']);

interface Entry {
  state: unknown;
  expiresAt: number;
}

export class MemoryStore implements Store {
  readonly name = 'memory';
  /** Never waits on I/O, so the limiter adds no deadline to its calls. */
  readonly timeoutMs = 0;
  private readonly entries: LRUCache<string, Entry>;
  private readonly clock: () => number;

  constructor(options: MemoryStoreOptions = {}) {
    if (!options || typeof options !== 'object' || Array.isArray(options)) invalidOption('MemoryStore', options, 'an options object { maxKeys?, clock? }');
    checkOptionNames('MemoryStore options', options, MEMORY_STORE_OPTION_NAMES);
    const maxKeys = wholeNumber('maxKeys', options.maxKeys ?? 100_000, 1, 100_000_000);
    this.entries = new LRUCache<string, Entry>({ max: maxKeys });
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
    const states: unknown[] = new Array(keys.length);
    for (let i = 0; i < keys.length; i++) states[i] = this.live(keys[i], now)?.state;
    if (request.mode === 'release' || request.mode === 'renew') {
      const { writes, results } = leaseTwins(states, limits, cost, now, leaseToken(request.token), request.mode);
      writes.forEach((write, i) => {
        if (write) this.entries.set(keys[i], { state: write.state, expiresAt: now + write.ttlMs });
      });
      return { at: now, allowed: true, results };
    }
    if (at !== undefined) {
      const { writes, results } = refundTwins(states, limits, cost, now, at);
      writes.forEach((write, i) => {
        if (write === null) this.entries.delete(keys[i]);
        else if (write) this.entries.set(keys[i], { state: write.state, expiresAt: now + write.ttlMs });
      });
      return { at: now, allowed: true, results };
    }
    const { allowed: admitted, checks } = evaluateTwins(states, limits, cost, now, request.token);
    // Lock-out, as lua/main.lua: a locked subject is denied (nothing charged, no strike); a consume
    // the limits deny is a strike.
    const lock = request.lockout;
    let lockedMs = 0;
    if (lock) {
      const view = lockView(this.live(lock.key, now)?.state as LockState | undefined, now, lock);
      lockedMs = view.lockedMs;
      if (lockedMs === 0 && !admitted && request.mode === 'consume') {
        const next = strike(view.strikes, now, lock);
        this.entries.set(lock.key, { state: next.state, expiresAt: now + next.ttlMs });
        lockedMs = next.lockedMs;
      }
    }
    const allowed = admitted && lockedMs === 0;
    const results: LimitResult[] = new Array(checks.length);
    for (let i = 0; i < checks.length; i++) {
      const check = checks[i];
      if (allowed && request.mode === 'consume' && check.next) this.entries.set(keys[i], { state: check.next.state, expiresAt: now + check.next.ttlMs });
      results[i] = { allowed: check.allowed, remaining: check.remaining, resetMs: check.resetMs, retryAfterMs: check.retryAfterMs };
    }
    return lockedMs > 0 ? { at: now, allowed, results, lockedMs } : { at: now, allowed, results };
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
    this.entries.set(settle.key, { state: record, expiresAt: now + ttl(settle.withinMs) });
    const { writes, results } = settleTwins(states, limits, settle.actual - request.cost, now, at);
    writes.forEach((write, i) => {
      if (write === null) this.entries.delete(keys[i]);
      else if (write) this.entries.set(keys[i], { state: write.state, expiresAt: now + write.ttlMs });
    });
    return { at: now, allowed: true, results, settled: outcome };
  }

  /** A key's entry, or undefined when absent or expired (then dropped). Reading it makes it the most recently used. */
  private live(key: string, now: number): Entry | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAt <= now) {
      this.entries.delete(key);
      return undefined;
    }
    return entry;
  }

  async reset(keys: readonly string[]): Promise<void> {
    for (const key of keys) this.entries.delete(key);
  }

  /** How many subjects' states are held now (expired ones may still count until read). */
  get size(): number {
    return this.entries.size;
  }
}
