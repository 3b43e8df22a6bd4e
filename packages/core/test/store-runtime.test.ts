// The store runtime: one per store, every call (reset and refund included) through the same guard, one 'ready' listener per client.
import { EventEmitter } from 'node:events';
import { createLimiter, FloodgateError, MemoryStore, type Logger, type Store, type StoreRequest, type StoreResult } from '@floodgate/core';
import { runtimeFor } from '../src/failure/store-runtime';

/** A store whose backend can be switched off; counts each kind of call. */
class SwitchStore implements Store {
  readonly name = 'switch';
  readonly timeoutMs = 0;
  up = true;
  evaluations = 0;
  resets = 0;
  private readonly memory = new MemoryStore();
  async evaluate(request: StoreRequest): Promise<StoreResult> {
    this.evaluations++;
    if (!this.up) throw new FloodgateError('FG_STORE_UNAVAILABLE', 'backend is down');
    return this.memory.evaluate(request);
  }
  async reset(keys: readonly string[]): Promise<void> {
    this.resets++;
    if (!this.up) throw new FloodgateError('FG_STORE_UNAVAILABLE', 'backend is down');
    return this.memory.reset(keys);
  }
}

const quiet: Logger = { warn: () => undefined, error: () => undefined };

describe('store runtime', () => {
  it('is one per store object, found again by every limiter on it', () => {
    const store = new SwitchStore();
    expect(runtimeFor(store)).toBe(runtimeFor(store));
    expect(runtimeFor(store)).not.toBe(runtimeFor(new SwitchStore()));
  });

  it('sends reset through the breaker and its counts: a failed reset is a store failure, and an open breaker skips it', async () => {
    const store = new SwitchStore();
    const limiter = createLimiter({ store, limit: 5, breaker: { failureThreshold: 2, coolDownMs: 60_000 }, logger: quiet });
    await limiter.reset('a');
    expect(limiter.health().stores[0].calls).toBe(1);
    store.up = false;
    await expect(limiter.reset('a')).rejects.toMatchObject({ code: 'FG_STORE_UNAVAILABLE' });
    await expect(limiter.reset('a')).rejects.toMatchObject({ code: 'FG_STORE_UNAVAILABLE' });
    const health = limiter.health().stores[0];
    expect(health).toMatchObject({ breaker: 'open', consecutiveFailures: 2, calls: 3 });
    expect(health.errors.connection).toBe(2);
    // Open: the next reset is skipped, never reaching the store.
    await expect(limiter.reset('a')).rejects.toThrow(/circuit breaker open/);
    expect(store.resets).toBe(3);
  });

  it('counts refunds like consumes, and a refund skipped by the open breaker resolves false', async () => {
    const store = new SwitchStore();
    const limiter = createLimiter({ store, limit: 5, breaker: { failureThreshold: 1, coolDownMs: 60_000 }, logger: quiet });
    const d = await limiter.consume('a');
    expect(await limiter.refund('a', { at: d.at! })).toBe(true);
    expect(limiter.health().stores[0].calls).toBe(2);
    store.up = false;
    expect(await limiter.refund('a', { at: d.at! })).toBe(false);
    expect(limiter.health().stores[0].breaker).toBe('open');
    expect(await limiter.refund('a', { at: d.at! })).toBe(false);
    expect(store.evaluations).toBe(3);
  });

  it("listens to a connection's 'ready' once, however many stores and limiters use it, and each store's breaker hears it", async () => {
    const client = new EventEmitter();
    let now = 0;
    const clock = () => now;
    // Two stores on one client (RedisStore exposes its client as `connection`).
    const stores = [0, 1].map(() => {
      const s = new SwitchStore();
      return Object.assign(s, { connection: client, onReady: (listener: () => void) => void client.on('ready', listener) });
    });
    const limiters = stores.flatMap((store) =>
      [0, 1].map(() => createLimiter({ store, limit: 5, clock, breaker: { failureThreshold: 1, coolDownMs: 10_000 }, logger: quiet })),
    );
    expect(client.listenerCount('ready')).toBe(1);
    for (const s of stores) s.up = false;
    for (const l of limiters) await l.consume('a');
    expect(limiters.map((l) => l.health().stores[0].breaker)).toEqual(['open', 'open', 'open', 'open']);
    for (const s of stores) s.up = true;
    client.emit('ready');
    // The next request of each store probes at once, long before the cool-down's end.
    for (const l of limiters) expect((await l.consume('a')).reason).toBe('allowed');
  });
});
