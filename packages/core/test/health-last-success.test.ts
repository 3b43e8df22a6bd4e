// health(): a store's lastSuccessAt is the wall-clock time of its last answer (worked out when read, failure/store-runtime.ts).
import { createLimiter, MemoryStore } from '../src';

describe('health lastSuccessAt', () => {
  it('is unset before any answer, then the time of the last answer, between the clocks read around it', async () => {
    const limiter = createLimiter({ store: new MemoryStore(), limit: 10, windowMs: '1h', prefix: 'last-success', instances: 1 });
    expect(limiter.health().stores[0]?.lastSuccessAt ?? null).toBeNull();
    const before = Date.now();
    await limiter.consume('a');
    const after = Date.now();
    const at = Date.parse(limiter.health().stores[0]!.lastSuccessAt!);
    // Rounded to the ms, from a monotonic reading: within a ms of the clocks read around the call.
    expect(at).toBeGreaterThanOrEqual(before - 1);
    expect(at).toBeLessThanOrEqual(after + 1);
  });
});
