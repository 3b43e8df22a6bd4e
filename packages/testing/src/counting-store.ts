// A store wrapper that records when each call reaches the real store, to show what a breaker let through.
import type { Store, StoreRequest, StoreResult } from '@floodgate/core';

export class CountingStore implements Store {
  readonly name: string;
  /** performance.now() of every evaluate call that reached the wrapped store. */
  readonly calls: number[] = [];
  constructor(private readonly inner: Store) {
    this.name = inner.name;
  }
  get timeoutMs() {
    return this.inner.timeoutMs;
  }
  get warnings() {
    return this.inner.warnings;
  }
  evaluate(request: StoreRequest): Promise<StoreResult> {
    this.calls.push(performance.now());
    return this.inner.evaluate(request);
  }
  reset(keys: readonly string[]): Promise<void> {
    return this.inner.reset(keys);
  }
}
