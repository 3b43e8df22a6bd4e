// A bounded two-level memo for values built from two strings the caller already has (scope and
// subject, method and route): a hit is two Map reads and builds no string. Past `max` values it
// starts over (a miss only costs building the value again).
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
