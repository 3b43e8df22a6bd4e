// What the store last told this instance about a subject (units left, when they come back), so that a local decision gives out at most its share of what is left, not of the whole limit.
import { LRUCache } from 'lru-cache';
import type { StoreLimit } from '../algorithms/registry';
import type { StoreRequest, StoreResult } from '../stores/store';

/**
 * The most subjects one limiter remembers (least recently used dropped). An entry is a few numbers
 * per limit (about 200 bytes with its LRU slot: 2 MB at most per limiter), made for a subject the
 * store found with less than its whole limit left, by a limiter on a store that can fail
 * (asynchronous: not MemoryStore).
 */
export const SUBJECT_MEMORY_MAX = 10_000;

interface Remembered {
  /** Per limit: units left when the store answered, and the clock (ms) at which they are all back (Infinity: no cap from it, a lease limit). */
  readonly remaining: readonly number[];
  readonly fullAt: readonly number[];
  /** The clock when the store answered (a refill counts from it). */
  readonly at: number;
  /** Units this instance admitted locally against it since; kept across the store's later answers (they do not include them). */
  used: number;
}

/**
 * Per subject (its first key), the store's last figures. A local decision for a subject remembered
 * here may admit at most `floor(left / instances) - used` units, where `left` is what the store said
 * was left (plus the refill since, for token-bucket and gcra) for each limit whose quota is not
 * back yet: across a fleet whose count is right, the instances give out at most what the store had
 * left. A subject the store never answered for is not remembered: its local share is the only cap.
 */
export class SubjectMemory {
  private entries: LRUCache<string, Remembered> | undefined;

  constructor(private readonly clock: () => number) {}

  /**
   * A store's answer to a consume or a peek. Remembered when the subject is already remembered (the
   * fresher figure replaces the old, `used` kept until every limit is back) or when some limit has
   * less left than its whole capacity (a subject nobody has used needs no memory: its share is the cap).
   */
  remember(request: StoreRequest, result: StoreResult): void {
    if ((request.mode !== 'consume' && request.mode !== 'peek') || result.lockedMs) return;
    const key = request.keys[0];
    const old = this.entries?.get(key);
    const limits = request.limits;
    const results = result.results;
    if (old === undefined) {
      let used = false;
      for (let i = 0; i < limits.length && !used; i++) used = !('leaseMs' in limits[i]) && results[i] !== undefined && results[i].remaining < limits[i].capacity;
      if (!used) return;
    }
    const now = this.clock();
    const fullAt = limits.map((l, i) => ('leaseMs' in l || results[i] === undefined ? Infinity : now + results[i].resetMs));
    const stillOut = old !== undefined && old.fullAt.some((t) => t !== Infinity && t > now);
    this.entries ??= new LRUCache<string, Remembered>({ max: SUBJECT_MEMORY_MAX });
    this.entries.set(key, { remaining: results.map((r) => r.remaining), fullAt, at: now, used: stillOut ? old.used : 0 });
  }

  /**
   * How many units this instance may still admit locally for the subject of `keys`, from the store's
   * last figures; undefined when it has none in force (nothing remembered, or every limit back).
   */
  allowance(keys: readonly string[], limits: readonly StoreLimit[], instances: number): number | undefined {
    const entry = this.entries?.get(keys[0]);
    if (entry === undefined) return undefined;
    const now = this.clock();
    let least: number | undefined;
    for (let i = 0; i < limits.length; i++) {
      const l = limits[i];
      if (!(entry.fullAt[i] > now) || entry.fullAt[i] === Infinity) continue;
      let left = entry.remaining[i];
      // A refilling limit earns units back as it goes; a window's come back at its reset (the safe side: none before).
      if ('refillPerSecond' in l) left = Math.min(l.capacity, left + (l.refillPerSecond * (now - entry.at)) / 1000);
      const share = Math.floor(left / instances);
      least = least === undefined ? share : Math.min(least, share);
    }
    if (least === undefined) {
      this.entries!.delete(keys[0]);
      return undefined;
    }
    return Math.max(0, least - entry.used);
  }

  /** `cost` units admitted locally for the subject of `keys` (remembered: they count against its allowance). */
  used(keys: readonly string[], cost: number): void {
    const entry = this.entries?.get(keys[0]);
    if (entry !== undefined) entry.used += cost;
  }

  /** Forgets subjects (the limiter's reset()). */
  forget(keys: readonly string[]): void {
    if (keys.length > 0) this.entries?.delete(keys[0]);
  }

  /** Subjects remembered now (for tests and the health snapshot). */
  get size(): number {
    return this.entries?.size ?? 0;
  }
}
