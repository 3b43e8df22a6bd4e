// Bounded memos for values built from strings the caller already has (an address; scope and subject;
// method and route): a hit is one or two Map reads and builds no string. Past `max` values a memo
// starts over (a miss only costs building the value again), so no memo grows with its callers.

/** One string to one value. */
export class Memo<V> {
  private readonly values = new Map<string, V>();
  constructor(private readonly max: number) {}

  get(key: string): V | undefined {
    return this.values.get(key);
  }

  set(key: string, value: V): void {
    if (this.values.size >= this.max && !this.values.has(key)) this.values.clear();
    this.values.set(key, value);
  }
}

/** Two strings to one value, without building a string from them. */
export class NestedMemo<V> {
  private readonly outer = new Map<string, Map<string, V>>();
  private held = 0;
  constructor(private readonly max: number) {}

  get(a: string, b: string): V | undefined {
    return this.outer.get(a)?.get(b);
  }

  set(a: string, b: string, value: V): void {
    if (this.held >= this.max) {
      this.outer.clear();
      this.held = 0;
    }
    let inner = this.outer.get(a);
    if (inner === undefined) this.outer.set(a, (inner = new Map()));
    inner.set(b, value);
    this.held++;
  }
}
