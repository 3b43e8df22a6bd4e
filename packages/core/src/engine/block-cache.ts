// Block cache: a subject denied until T is denied locally until T, with no store call.
import { LRUCache } from 'lru-cache';

interface Block {
  /** Monotonic ms at which a request of at least `cost` may be admitted again. */
  until: number;
  cost: number;
  decision: unknown;
}

/**
 * Quota only comes back with time, so a subject denied a request of cost c until T is denied any
 * request of cost >= c until T by every store. Cheaper requests still go to the store.
 */
export class BlockCache<D> {
  /**
   * Made at the first block: the LRU preallocates its slots (about 160 KB for the default 10,000),
   * and a limiter whose callers are never denied, or an app's many route limiters, need none.
   */
  private blocks: LRUCache<string, Block> | undefined;
  /** Lookups that found a block still in force (read by the metrics and the health snapshot). */
  hits = 0;
  constructor(
    private readonly max: number,
    private readonly clock: () => number,
  ) {}

  /** Whether no subject is blocked: a caller can skip naming the subject's key to ask. */
  get empty(): boolean {
    return this.blocks === undefined || this.blocks.size === 0;
  }

  /** The decision that blocked this subject, if it still applies to this cost; with the time left. */
  get(key: string, cost: number): { decision: D; leftMs: number } | undefined {
    if (this.blocks === undefined || this.blocks.size === 0) return undefined; // nobody is blocked: the common case, no lookup
    const block = this.blocks.get(key);
    if (block === undefined) return undefined;
    const leftMs = block.until - this.clock();
    if (leftMs <= 0) {
      this.blocks.delete(key);
      return undefined;
    }
    if (cost < block.cost) return undefined;
    this.hits++;
    return { decision: block.decision as D, leftMs };
  }

  set(key: string, cost: number, retryAfterMs: number, decision: D): void {
    if (retryAfterMs <= 0) return;
    this.blocks ??= new LRUCache<string, Block>({ max: this.max });
    const current = this.blocks.get(key);
    if (current && current.cost < cost && current.until > this.clock()) return; // keep the stricter block
    this.blocks.set(key, { until: this.clock() + retryAfterMs, cost, decision });
  }

  delete(key: string): void {
    this.blocks?.delete(key);
  }

  /** Forgets every block (a broad override changed: a raised limit must not wait for blocks set under the old one). */
  clear(): void {
    this.blocks?.clear();
  }
}
