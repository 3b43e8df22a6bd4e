// Bounded memos for values built from strings the caller already has (an address; scope and subject;
// method and route): a hit is one or two Map reads and builds no string. Each memo keeps two
// generations of at most `max` values each: when the current one is full it becomes the previous
// one (the older previous one is dropped), and a value found in the previous one moves back into
// the current. So a memo holds at most 2 x `max` values and never grows with its callers, and a
// set of callers that comes back in turn and is a little larger than `max` still mostly hits (a
// memo that starts over when full misses on every request of a cycle of max + 1 callers). A miss
// only costs building the value again.

/** One string to one value. */
export class Memo<V> {
  private current = new Map<string, V>();
  private previous = new Map<string, V>();
  constructor(private readonly max: number) {}

  get(key: string): V | undefined {
    const hit = this.current.get(key);
    if (hit !== undefined) return hit;
    const old = this.previous.get(key);
    if (old !== undefined) this.set(key, old);
    return old;
  }

  set(key: string, value: V): void {
    if (this.current.size >= this.max && !this.current.has(key)) {
      this.previous = this.current;
      this.current = new Map();
    }
    this.current.set(key, value);
  }

  /** Values held (both generations; a value in both counts twice): at most 2 x max. */
  get size(): number {
    return this.current.size + this.previous.size;
  }
}

/** Two strings to one value, without building a string from them. */
export class NestedMemo<V> {
  private current = new Map<string, Map<string, V>>();
  private previous = new Map<string, Map<string, V>>();
  /** Values in the current generation. */
  private held = 0;
  private previousHeld = 0;
  constructor(private readonly max: number) {}

  get(a: string, b: string): V | undefined {
    const hit = this.current.get(a)?.get(b);
    if (hit !== undefined) return hit;
    const old = this.previous.get(a)?.get(b);
    if (old !== undefined) this.set(a, b, old);
    return old;
  }

  set(a: string, b: string, value: V): void {
    let inner = this.current.get(a);
    if (inner !== undefined && inner.has(b)) {
      inner.set(b, value);
      return;
    }
    if (this.held >= this.max) {
      this.previous = this.current;
      this.previousHeld = this.held;
      this.current = new Map();
      this.held = 0;
      inner = undefined;
    }
    if (inner === undefined) this.current.set(a, (inner = new Map()));
    inner.set(b, value);
    this.held++;
  }

  /** Values held (both generations; a value in both counts twice): at most 2 x max. */
  get size(): number {
    return this.held + this.previousHeld;
  }
}
