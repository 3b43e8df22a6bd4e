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

/** Subjects held in the pending map before those with nothing pending are dropped (see `pending`): bounded whatever the callers. */
export const PENDING_SWEEP = 1024;

interface Remembered {
  /** Per limit: units left when the store answered, and the clock (ms) at which they are all back (Infinity: no cap from it, a lease limit). */
  readonly remaining: number[];
  readonly fullAt: number[];
  /** The clock when the store answered (a refill counts from it). */
  at: number;
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
  /** Per subject, units asked of the store and not answered yet (0: none, kept until the next sweep): at most PENDING_SWEEP entries besides the subjects in flight. */
  private readonly inFlight = new Map<string, number>();

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
    // Remembered already, as many limits: its figures rewritten in place (the LRU's get above made it the most recent).
    if (old !== undefined && old.fullAt.length === limits.length && results.length === limits.length) {
      let stillOut = false;
      for (let i = 0; i < limits.length; i++) {
        const t = old.fullAt[i];
        if (t !== Infinity && t > now) stillOut = true;
        old.remaining[i] = results[i].remaining;
        old.fullAt[i] = 'leaseMs' in limits[i] ? Infinity : now + results[i].resetMs;
      }
      old.at = now;
      if (!stillOut) old.used = 0;
      return;
    }
    const fullAt = limits.map((l, i) => ('leaseMs' in l || results[i] === undefined ? Infinity : now + results[i].resetMs));
    const stillOut = old !== undefined && old.fullAt.some((t) => t !== Infinity && t > now);
    this.entries ??= new LRUCache<string, Remembered>({ max: SUBJECT_MEMORY_MAX });
    this.entries.set(key, { remaining: results.map((r) => r.remaining), fullAt, at: now, used: stillOut ? old.used : 0 });
  }

  /**
   * How many units this instance may still admit locally for the subject of `keys`: its share of
   * what the store last said was left (each limit whose quota is not back yet; the whole limit when
   * it said nothing), less the units of this subject asked of the store and not answered yet, which
   * the store may still count (`pendingOthers`: this request's own call excluded), less what it
   * admitted locally since. Undefined when there is nothing to go on (no figure, nothing pending).
   */
  allowance(keys: readonly string[], limits: readonly StoreLimit[], instances: number, pendingOthers: number): number | undefined {
    let entry = this.entries?.get(keys[0]);
    if (entry === undefined && pendingOthers <= 0) return undefined;
    const now = this.clock();
    if (entry !== undefined && !entry.fullAt.some((t) => t !== Infinity && t > now)) {
      this.entries!.delete(keys[0]);
      if (pendingOthers <= 0) return undefined;
      entry = undefined;
    }
    let least = Infinity;
    for (let i = 0; i < limits.length; i++) {
      const l = limits[i];
      if ('leaseMs' in l) continue;
      let left = l.capacity;
      if (entry !== undefined && entry.fullAt[i] > now) {
        left = entry.remaining[i];
        // A refilling limit earns units back as it goes; a window's come back at its reset (the safe side: none before).
        if ('refillPerSecond' in l) left = Math.min(l.capacity, left + (l.refillPerSecond * (now - entry.at)) / 1000);
      }
      least = Math.min(least, Math.floor(Math.max(0, left - pendingOthers) / instances));
    }
    if (least === Infinity) return undefined;
    return Math.max(0, least - (entry?.used ?? 0));
  }

  /**
   * `cost` units admitted locally for the subject of `keys` under an allowance: they count against
   * it until its limits come back (an entry is made if the allowance came from pending calls alone).
   */
  used(keys: readonly string[], limits: readonly StoreLimit[], cost: number): void {
    let entry = this.entries?.get(keys[0]);
    if (entry === undefined) {
      const now = this.clock();
      const back = (l: StoreLimit) => ('leaseMs' in l ? Infinity : now + ('refillPerSecond' in l ? (l.capacity * 1000) / l.refillPerSecond : l.windowMs));
      entry = { remaining: limits.map((l) => l.capacity), fullAt: limits.map(back), at: now, used: 0 };
      this.entries ??= new LRUCache<string, Remembered>({ max: SUBJECT_MEMORY_MAX });
      this.entries.set(keys[0], entry);
    }
    entry.used += cost;
  }

  /** Units of a subject asked of the store (+cost when sent, -cost when its answer or failure is known). */
  pending(keys: readonly string[], delta: number): void {
    const key = keys[0];
    const held = this.inFlight.get(key);
    const n = (held ?? 0) + delta;
    if (held === undefined && n <= 0) return;
    // A subject back to 0 keeps its entry (its next request rewrites it rather than adding and
    // deleting an entry per request); once PENDING_SWEEP subjects are held, those at 0 go.
    this.inFlight.set(key, n > 0 ? n : 0);
    if (n <= 0 && this.inFlight.size > PENDING_SWEEP) {
      for (const [k, v] of this.inFlight) if (v === 0) this.inFlight.delete(k);
    }
  }

  /** Units of this subject asked of the store and not answered yet. */
  pendingOf(keys: readonly string[]): number {
    return this.inFlight.get(keys[0]) ?? 0;
  }

  /** Forgets subjects (the limiter's reset()). */
  forget(keys: readonly string[]): void {
    if (keys.length > 0) this.entries?.delete(keys[0]);
  }

  /** Subjects held in the pending map now, at 0 or not (tests: it stays bounded). */
  get pendingHeld(): number {
    return this.inFlight.size;
  }

  /** Subjects remembered now (for tests and the health snapshot). */
  get size(): number {
    return this.entries?.size ?? 0;
  }
}
