// MemoryStore's protected share: the states of blocked and locked-out subjects, which plain traffic cannot evict.

/** What a held entry protects: a lock-out in force, or a refusal by the limits (usually far shorter). */
export type HoldKind = 'block' | 'lock';

interface Held<E> {
  entry: E;
  until: number;
  kind: HoldKind;
}

/**
 * A bounded map of entries, each held until a time. Only the store's refusals put entries here (a
 * subject refused until T, a lock-out until T), so other callers' plain traffic never evicts them:
 * it goes to the plain LRU beside this share. When the share is full, a newcomer takes the place of:
 * 1. a hold that has already ended (handed back to the plain LRU through `release`, not lost);
 * 2. else, the block that ends first, if the newcomer is a lock-out or a block ending later;
 * and otherwise it is refused (the caller keeps it in the plain LRU). A lock-out in force is never
 * displaced: not by plain traffic, not by another lock-out. Either loss calls `overflow`.
 */
export class ProtectedShare<E> {
  private readonly map = new Map<string, Held<E>>();
  private readonly heaps = { block: new UntilHeap((until, key) => this.current('block', until, key)), lock: new UntilHeap((until, key) => this.current('lock', until, key)) };

  constructor(
    readonly max: number,
    private readonly release: (key: string, entry: E) => void,
    private readonly overflow: () => void,
  ) {}

  get size(): number {
    return this.map.size;
  }

  get(key: string): Held<E> | undefined {
    // Nobody refused (an admitting store's usual state): every read of the store asks, no lookup then.
    return this.map.size === 0 ? undefined : this.map.get(key);
  }

  delete(key: string): boolean {
    return this.map.delete(key);
  }

  /** Holds `entry` until `until` (never shortening a hold in force, never demoting a lock). False when there is no room for it. */
  hold(key: string, entry: E, until: number, kind: HoldKind, now: number): boolean {
    const held = this.map.get(key);
    if (held) {
      held.entry = entry;
      if (until > held.until || (kind === 'lock' && held.kind === 'block')) {
        held.until = Math.max(until, held.until);
        held.kind = kind === 'lock' ? 'lock' : held.kind;
        this.heaps[held.kind].push(held.until, key, this.map.size);
      }
      return true;
    }
    if (this.map.size >= this.max && !this.makeRoom(until, kind, now)) return false;
    this.map.set(key, { entry, until, kind });
    this.heaps[kind].push(until, key, this.map.size);
    return true;
  }

  /** Frees one place for a newcomer, by the rules above. */
  private makeRoom(until: number, kind: HoldKind, now: number): boolean {
    for (const k of ['lock', 'block'] as const) {
      const top = this.top(k);
      if (top && top[1].until <= now) {
        this.take(k, top[0]);
        this.release(top[0], top[1].entry);
        return true;
      }
    }
    const block = this.top('block');
    const room = block !== undefined && (kind === 'lock' || block[1].until < until);
    if (room) this.take('block', block[0]);
    this.overflow();
    return room;
  }

  /** Whether a heap item still stands for its key's hold (not deleted, not held longer or as a lock since). */
  private current(kind: HoldKind, until: number, key: string): boolean {
    const held = this.map.get(key);
    return held !== undefined && held.kind === kind && held.until === until;
  }

  /** The hold of this kind that ends first, skipping stale heap items. */
  private top(kind: HoldKind): [string, Held<E>] | undefined {
    const heap = this.heaps[kind];
    for (let item = heap.peek(); item !== undefined; item = heap.peek()) {
      if (this.current(kind, item[0], item[1])) return [item[1], this.map.get(item[1])!];
      heap.pop();
    }
    return undefined;
  }

  private take(kind: HoldKind, key: string): void {
    this.heaps[kind].pop();
    this.map.delete(key);
  }
}

/** A binary min-heap of [until, key]. Stale items are skipped by the reader; it rebuilds before they outnumber the live ones. */
class UntilHeap {
  private h: [number, string][] = [];
  constructor(private readonly current: (until: number, key: string) => boolean) {}

  peek(): [number, string] | undefined {
    return this.h[0];
  }

  push(until: number, key: string, live: number): void {
    const h = this.h;
    if (h.length >= 2 * live + 64) this.compact();
    h.push([until, key]);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (h[p][0] <= h[i][0]) break;
      [h[p], h[i]] = [h[i], h[p]];
      i = p;
    }
  }

  pop(): void {
    const h = this.h;
    const last = h.pop();
    if (last === undefined || h.length === 0) return;
    h[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && h[l][0] < h[m][0]) m = l;
      if (r < h.length && h[r][0] < h[m][0]) m = r;
      if (m === i) return;
      [h[m], h[i]] = [h[i], h[m]];
      i = m;
    }
  }

  /** Drops the stale items (at most one current item per key remains), sorted: a sorted array is a valid min-heap. */
  private compact(): void {
    this.h = this.h.filter(([until, key]) => this.current(until, key)).sort((a, b) => a[0] - b[0]);
  }
}
