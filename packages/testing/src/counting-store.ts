// A store wrapper that records when each call reaches the real store, to show what a breaker let through.

/**
 * The part of @floodgate/core's `Store` this wrapper needs, written out: @floodgate/testing does not
 * depend on core (core's own tests use it), and a CountingStore is a `Store` by its shape.
 */
interface StoreShape<Request, Result> {
  readonly name: string;
  readonly timeoutMs?: number;
  readonly warnings?: readonly string[];
  evaluate(request: Request): Promise<Result>;
  reset(keys: readonly string[]): Promise<void>;
}

export class CountingStore<Request, Result> implements StoreShape<Request, Result> {
  readonly name: string;
  /** performance.now() of every evaluate call that reached the wrapped store. */
  readonly calls: number[] = [];
  constructor(private readonly inner: StoreShape<Request, Result>) {
    this.name = inner.name;
  }
  get timeoutMs() {
    return this.inner.timeoutMs;
  }
  get warnings() {
    return this.inner.warnings;
  }
  evaluate(request: Request): Promise<Result> {
    this.calls.push(performance.now());
    return this.inner.evaluate(request);
  }
  reset(keys: readonly string[]): Promise<void> {
    return this.inner.reset(keys);
  }
}
