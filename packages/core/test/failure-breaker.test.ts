// Failure policy without Redis: option validation, the circuit breaker's states, and each failure mode's decision.
import {
  createLimiter,
  FloodgateError,
  MemoryStore,
  RedisStore,
  type Logger,
  type Store,
  type StoreErrorEvent,
  type StoreRequest,
  type StoreResult,
} from '@floodgate/core';
import { Redis } from 'ioredis';
import { CircuitBreaker, resolveBreakerOptions, type BreakerTransition } from '../src/failure/breaker';
import { localLimits } from '../src/failure/policy';
import { resolveLimiterOptions } from '../src/engine/options';

/** A store whose backend can be switched off: calls then reject, as a RedisStore does during an outage. */
class SwitchStore implements Store {
  readonly name = 'switch';
  readonly timeoutMs = 0;
  up = true;
  calls = 0;
  private readonly memory = new MemoryStore();
  async evaluate(request: StoreRequest): Promise<StoreResult> {
    this.calls++;
    if (!this.up) throw new FloodgateError('FG_STORE_UNAVAILABLE', 'backend is down');
    return this.memory.evaluate(request);
  }
  reset(keys: readonly string[]): Promise<void> {
    return this.memory.reset(keys);
  }
}

/** Polls `check` every 10 ms, for at most 5 s. */
async function waitUntil(check: () => boolean): Promise<void> {
  const until = Date.now() + 5_000;
  while (!check()) {
    if (Date.now() > until) throw new Error('waitUntil: timed out');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A custom store that never answers (and declares no timeout of its own). */
class HangingStore implements Store {
  readonly name = 'hanging';
  calls = 0;
  evaluate(): Promise<StoreResult> {
    this.calls++;
    return new Promise<StoreResult>(() => undefined);
  }
  async reset(): Promise<void> {}
}

function recordingLogger(): Logger & { lines: { level: string; message: string }[] } {
  const lines: { level: string; message: string }[] = [];
  return {
    lines,
    warn: (message) => lines.push({ level: 'warn', message }),
    error: (message) => lines.push({ level: 'error', message }),
  };
}

const invalid = (fn: () => unknown, option: string) => {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(FloodgateError);
    expect((error as FloodgateError).code).toBe('FG_INVALID_OPTION');
    expect((error as FloodgateError).option).toBe(option);
    return;
  }
  throw new Error(`expected FG_INVALID_OPTION for ${option}`);
};

describe('failure options', () => {
  it('defaults: fail local, instances learned (undefined: auto), 100 ms deadline for custom stores, breaker 5 failures / 1 s up to 10 s, console', () => {
    const failure = resolveLimiterOptions({ limit: 5, store: new HangingStore() }).failure;
    expect(failure).toMatchObject({
      failMode: 'local',
      instances: undefined,
      timeoutMs: 100,
      breaker: { failureThreshold: 5, coolDownMs: 1_000, maxCoolDownMs: 10_000 },
      onStoreError: undefined,
      logger: console,
    });
    // Stores that bound their own calls get no second timer.
    expect(resolveLimiterOptions({ limit: 5 }).failure.timeoutMs).toBeUndefined();
  });

  it.each([
    [{ failMode: 'half' }, 'failMode'],
    [{ instances: 0 }, 'instances'],
    [{ instances: 2.5 }, 'instances'],
    [{ timeoutMs: 0, store: new HangingStore() }, 'timeoutMs'],
    [{ timeoutMs: '1x', store: new HangingStore() }, 'timeoutMs'],
    [{ breaker: 3 }, 'breaker'],
    [{ breaker: { failureThreshold: 0 } }, 'breaker.failureThreshold'],
    [{ breaker: { coolDownMs: -1 } }, 'breaker.coolDownMs'],
    [{ breaker: { coolDownMs: 5_000, maxCoolDownMs: 1_000 } }, 'breaker.maxCoolDownMs'],
    [{ onStoreError: 'log' }, 'onStoreError'],
    [{ logger: { warn: () => undefined } }, 'logger'],
  ])('rejects %p at construction, naming `%s`', (options, option) => {
    invalid(() => createLimiter({ limit: 5, ...(options as object) }), option);
  });

  it('refuses a limiter timeoutMs when the store bounds its own calls, and says where to set it', () => {
    const client = new Redis({ lazyConnect: true });
    try {
      const store = new RedisStore({ client, timeoutMs: 50 });
      expect(() => createLimiter({ limit: 5, store, timeoutMs: 20 })).toThrow(/set the store's timeoutMs/);
      invalid(() => createLimiter({ limit: 5, store, timeoutMs: 20 }), 'timeoutMs');
    } finally {
      client.disconnect();
    }
  });

  it('warns once per store about a client that resends unanswered commands', () => {
    const resending = new Redis({ lazyConnect: true });
    const safe = new Redis({ lazyConnect: true, autoResendUnfulfilledCommands: false });
    try {
      const logger = recordingLogger();
      const store = new RedisStore({ client: resending });
      createLimiter({ limit: 5, store, logger });
      createLimiter({ limit: 9, store, logger, failMode: 'closed' });
      expect(logger.lines.filter((l) => /autoResendUnfulfilledCommands/.test(l.message))).toHaveLength(1);
      const quiet = recordingLogger();
      createLimiter({ limit: 5, store: new RedisStore({ client: safe }), logger: quiet });
      expect(quiet.lines).toEqual([]);
    } finally {
      resending.disconnect();
      safe.disconnect();
    }
  });
});

describe('local share', () => {
  it('divides every limit by instances, rounded down, at least 1; refill rates too', () => {
    const { limits } = resolveLimiterOptions({
      limits: [
        { name: 'a', algorithm: 'fixed-window', limit: 10, windowMs: 1_000 },
        { name: 'b', algorithm: 'sliding-window-counter', limit: 2, windowMs: 1_000 },
        { name: 'c', algorithm: 'token-bucket', burst: 9, refillPerSecond: 3 },
        { name: 'd', algorithm: 'gcra', burst: 100, refillPerSecond: 50 },
      ],
    });
    const local = localLimits(limits, 4);
    expect(local.map((l) => l.limit)).toEqual([2, 1, 2, 25]);
    expect(local.map((l) => l.store.capacity)).toEqual([2, 1, 2, 25]);
    expect(local.map((l) => l.store)).toEqual([
      { algorithm: 'fixed-window', capacity: 2, windowMs: 1_000 },
      { algorithm: 'sliding-window-counter', capacity: 1, windowMs: 1_000 },
      { algorithm: 'token-bucket', capacity: 2, refillPerSecond: 0.75 },
      { algorithm: 'gcra', capacity: 25, refillPerSecond: 12.5 },
    ]);
    expect(local.map((l) => l.keySuffix)).toEqual(limits.map((l) => l.keySuffix));
  });
});

describe('CircuitBreaker', () => {
  let now = 0;
  const clock = () => now;
  const make = (o = {}) => {
    const breaker = new CircuitBreaker(resolveBreakerOptions({ failureThreshold: 3, coolDownMs: 100, maxCoolDownMs: 350, ...o }), clock);
    const seen: BreakerTransition[] = [];
    breaker.subscribe((t) => seen.push(t));
    return { breaker, seen };
  };
  beforeEach(() => {
    now = 1_000;
  });

  it('opens after failureThreshold consecutive failures; a success in between resets the count', () => {
    const { breaker, seen } = make();
    breaker.failure(new Error('a'), false);
    breaker.failure(new Error('b'), false);
    breaker.success();
    breaker.failure(new Error('c'), false);
    breaker.failure(new Error('d'), false);
    expect(breaker.state).toBe('closed');
    breaker.failure(new Error('e'), false);
    expect(breaker.state).toBe('open');
    expect(seen).toEqual([{ from: 'closed', to: 'open', error: new Error('e'), failures: 3, retryInMs: 100 }]);
    expect(breaker.admit()).toBe('skip');
    // Late failures of calls that started before it opened change nothing and report nothing.
    breaker.failure(new Error('late'), false);
    expect(seen).toHaveLength(1);
  });

  it('after the cool-down lets exactly one probe through; its failure doubles the wait up to the cap', () => {
    const { breaker, seen } = make();
    for (let i = 0; i < 3; i++) breaker.failure(new Error('x'), false);
    now += 99;
    expect(breaker.admit()).toBe('skip');
    expect(breaker.msUntilProbe()).toBe(1);
    now += 1;
    expect(breaker.admit()).toBe('probe');
    expect(breaker.state).toBe('half-open');
    expect(breaker.admit()).toBe('skip'); // the probe is in flight: nobody else waits on the store
    breaker.failure(new Error('still down'), true);
    expect(breaker.state).toBe('open');
    expect(breaker.msUntilProbe()).toBe(200);
    now += 200;
    expect(breaker.admit()).toBe('probe');
    breaker.failure(new Error('still down'), true);
    now += 350;
    expect(breaker.admit()).toBe('probe');
    breaker.failure(new Error('still down'), true);
    expect(breaker.msUntilProbe()).toBe(350); // capped at maxCoolDownMs
    expect(seen.map((t) => `${t.from}>${t.to}:${t.retryInMs}`)).toEqual([
      'closed>open:100',
      'open>half-open:0',
      'half-open>open:200',
      'open>half-open:0',
      'half-open>open:350',
      'open>half-open:0',
      'half-open>open:350',
    ]);
  });

  it('a successful probe closes it and restores the first cool-down', () => {
    const { breaker, seen } = make();
    for (let i = 0; i < 3; i++) breaker.failure(new Error('x'), false);
    now += 100;
    breaker.admit();
    breaker.failure(new Error('x'), true);
    now += 200;
    expect(breaker.admit()).toBe('probe');
    breaker.success();
    expect(breaker.state).toBe('closed');
    expect(breaker.admit()).toBe('call');
    for (let i = 0; i < 3; i++) breaker.failure(new Error('x'), false);
    expect(breaker.msUntilProbe()).toBe(100);
    expect(seen.map((t) => t.to)).toEqual(['open', 'half-open', 'open', 'half-open', 'closed', 'open']);
  });
});

describe('limiter with a failing store', () => {
  const breaker = { failureThreshold: 2, coolDownMs: 60_000 };

  it('fail-open serves, fail-closed refuses with a Retry-After, both degraded with no quota figures', async () => {
    const store = new SwitchStore();
    const logger = recordingLogger();
    const open = createLimiter({ store, limit: 1, failMode: 'open', breaker, logger });
    const closed = createLimiter({ store, limit: 1, failMode: 'closed', breaker, logger });
    expect((await open.consume('a')).reason).toBe('allowed');
    expect((await open.consume('a')).reason).toBe('limited');
    store.up = false;
    // 'a' is in the block cache (denied by the store until its reset): answered without the store.
    expect((await open.consume('a')).reason).toBe('blocked');
    const o = await open.consume('z');
    expect(o).toEqual({
      allowed: true,
      reason: 'fail-open',
      degraded: true,
      limit: null,
      remaining: null,
      resetMs: null,
      retryAfterMs: 0,
      policy: null,
      limits: [],
    });
    const c = await closed.consume('b');
    expect(c).toMatchObject({ allowed: false, reason: 'fail-closed', degraded: true, limit: null, remaining: null, limits: [] });
    expect(c.retryAfterMs).toBeGreaterThanOrEqual(1_000);
    // The breaker is open now (2 failures): the Retry-After is the time to the next probe.
    const c2 = await closed.consume('b');
    expect(c2.retryAfterMs).toBeGreaterThan(59_000);
    expect(c2.retryAfterMs).toBeLessThanOrEqual(60_000);
  });

  it('fail-local limits each subject to its share from memory, keyed per subject and scope', async () => {
    const store = new SwitchStore();
    store.up = false;
    const local = createLimiter({ store, limit: 10, windowMs: '1m', failMode: 'local', instances: 3, breaker, logger: recordingLogger() });
    const a = [];
    for (let i = 0; i < 5; i++) a.push(await local.consume('alice'));
    expect(a.map((d) => d.allowed)).toEqual([true, true, true, false, false]);
    expect(a.every((d) => d.reason === 'fail-local' && d.degraded)).toBe(true);
    expect(a[0]).toMatchObject({ limit: 3, remaining: 2 });
    expect(a[3].retryAfterMs).toBeGreaterThan(0);
    expect((await local.consume('bob')).allowed).toBe(true);
    expect((await local.consume('alice', { scope: '/other' })).allowed).toBe(true);
    // A cost above the local share (3) but within the shared limit (10) waits for the store, not forever.
    const big = await local.consume('carol', { cost: 5 });
    expect(big).toMatchObject({ allowed: false, reason: 'fail-local' });
    expect(big.retryAfterMs).toBeGreaterThanOrEqual(1_000);
    // reset() forgets the local counts too.
    await local.reset('alice').catch(() => undefined);
    expect((await local.consume('alice')).allowed).toBe(true);
  });

  it("instances 'auto' (the default): the share follows the count the store's announce() returns, remembered when it fails", async () => {
    // A custom store that can announce: what it answers is the fleet's count (RedisStore's is fleet-redis.test.ts).
    class FleetStore extends SwitchStore {
      readonly announceMs = 100;
      count = 4;
      announced: { key: string; member: string; ttlMs: number }[] = [];
      async announce(key: string, member: string, ttlMs: number): Promise<number> {
        this.announced.push({ key, member, ttlMs });
        if (!this.up) throw new FloodgateError('FG_STORE_UNAVAILABLE', 'backend is down');
        return this.count;
      }
    }
    const store = new FleetStore();
    const limiter = createLimiter({ store, prefix: 'fleetunit', limit: 10, windowMs: '1h', breaker: { failureThreshold: 100 }, logger: recordingLogger() });
    await waitUntil(() => limiter.health().fleets?.[0]?.instances === 4);
    expect(store.announced[0]).toEqual({ key: 'fleetunit.instances', member: expect.stringMatching(/^[A-Za-z0-9_-]{16}$/), ttlMs: 300 });
    store.up = false;
    const admitted = async (subject: string) => (await Promise.all(Array.from({ length: 20 }, () => limiter.consume(subject)))).filter((d) => d.allowed).length;
    expect(await admitted('a')).toBe(2); // floor(10 / 4)
    // The store is away: announcements fail and the last count stays.
    const failed = limiter.health().fleets![0].failures;
    await waitUntil(() => limiter.health().fleets![0].failures > failed);
    expect(limiter.health().fleets![0].instances).toBe(4);
    expect(await admitted('b')).toBe(2);
    // Back, with a smaller fleet: the share grows.
    store.count = 2;
    store.up = true;
    await waitUntil(() => limiter.health().fleets?.[0]?.instances === 2);
    store.up = false;
    expect(await admitted('c')).toBe(5); // floor(10 / 2)
  });

  it('does not put degraded denials in the block cache: limiting resumes from the store at once', async () => {
    const store = new SwitchStore();
    const local = createLimiter({ store, limit: 1, failMode: 'local', breaker: { failureThreshold: 100 }, logger: recordingLogger() });
    store.up = false;
    await local.consume('a');
    expect((await local.consume('a')).reason).toBe('fail-local');
    store.up = true;
    expect((await local.consume('a')).reason).toBe('allowed');
  });

  it('skips the store while open, probes it after the cool-down, and resumes when it answers', async () => {
    let now = 0;
    const store = new SwitchStore();
    const events: StoreErrorEvent[] = [];
    const logger = recordingLogger();
    const options = {
      store,
      limit: 1_000,
      clock: () => now,
      breaker: { failureThreshold: 3, coolDownMs: 1_000 },
      onStoreError: (e: StoreErrorEvent) => events.push(e),
      logger,
    };
    // Two routes, one store, the same hook and logger: one breaker, one report per change.
    const routeA = createLimiter({ ...options, failMode: 'open' });
    const routeB = createLimiter({ ...options, failMode: 'closed' });
    store.up = false;
    for (let i = 0; i < 20; i++) {
      await routeA.consume('u');
      await routeB.consume('u');
    }
    expect(store.calls).toBe(3);
    expect(events.map((e) => e.state)).toEqual(['open']);
    expect(events[0]).toMatchObject({ previous: 'closed', store: 'switch', failures: 3, retryInMs: 1_000 });
    expect((events[0].error as FloodgateError).code).toBe('FG_STORE_UNAVAILABLE');
    now += 1_000;
    expect((await routeB.consume('u')).reason).toBe('fail-closed'); // the probe, failed
    expect(store.calls).toBe(4);
    now += 1_999;
    expect((await routeA.consume('u')).reason).toBe('fail-open');
    expect(store.calls).toBe(4); // the second wait is twice as long
    now += 1;
    store.up = true;
    expect((await routeA.consume('u')).reason).toBe('allowed'); // the probe, answered
    expect((await routeB.consume('u')).reason).toBe('allowed');
    expect(events.map((e) => `${e.previous}>${e.state}`)).toEqual([
      'closed>open',
      'open>half-open',
      'half-open>open',
      'open>half-open',
      'half-open>closed',
    ]);
    // The first failed call of the outage, then each state change: one line each, never one per request.
    expect(logger.lines.map((l) => l.level)).toEqual(['error', 'error', 'warn', 'error', 'warn', 'warn']);
    expect(logger.lines[0].message).toBe(
      `[floodgate] store "switch" failed (backend is down [FG_STORE_UNAVAILABLE] See node_modules/@floodgate/core/docs/errors.md#fg-store-unavailable): requests it cannot decide are now served without limiting (failMode 'open').` +
        ` Other endpoints on this store: refused with 503 and Retry-After (failMode 'closed'). Logged once until the store answers again. The circuit opens after 3 failures in a row.`,
    );
    expect(logger.lines[1].message).toMatch(/store "switch" failed 3 times in a row .*circuit open/);
  });

  it('logs the first failed call of each outage once, before the breaker opens, naming its failMode', async () => {
    const store = new SwitchStore();
    const logger = recordingLogger();
    const events: StoreErrorEvent[] = [];
    const closed = createLimiter({ store, limit: 100, failMode: 'closed', breaker: { failureThreshold: 5 }, logger, onStoreError: (e) => events.push(e) });
    const lines = () => logger.lines.map((l) => l.message);
    expect((await closed.consume('a')).reason).toBe('allowed');
    store.up = false;
    expect((await closed.consume('a')).reason).toBe('fail-closed');
    // Loud at once: the breaker has not opened (1 failure of 5), yet the line says what the route does.
    expect(events).toEqual([]);
    expect(lines()).toEqual([expect.stringMatching(/^\[floodgate\] store "switch" failed \(.+\): requests it cannot decide are now refused with 503 and Retry-After \(failMode 'closed'\)\. Logged once/)]);
    for (let i = 0; i < 3; i++) await closed.consume('a');
    expect(lines()).toHaveLength(1); // 4 failures, still once
    store.up = true;
    expect((await closed.consume('a')).reason).toBe('allowed'); // answered: the outage is over
    store.up = false;
    await closed.consume('a');
    await closed.consume('a');
    // A new outage, a new line; the breaker never opened (never 5 failures in a row).
    expect(lines()).toHaveLength(2);
    expect(lines()[1]).toBe(lines()[0]);
    expect(events).toEqual([]);
  });

  it('a hook that throws is logged and never reaches the request', async () => {
    const store = new SwitchStore();
    store.up = false;
    const logger = recordingLogger();
    const limiter = createLimiter({
      store,
      limit: 5,
      breaker: { failureThreshold: 1 },
      logger,
      onStoreError: () => {
        throw new Error('hook bug');
      },
    });
    expect((await limiter.consume('a')).reason).toBe('fail-local');
    expect(logger.lines.some((l) => l.level === 'error' && /onStoreError threw: hook bug/.test(l.message))).toBe(true);
  });

  it('bounds a custom store that never answers with the limiter timeoutMs', async () => {
    const store = new HangingStore();
    const events: StoreErrorEvent[] = [];
    const limiter = createLimiter({
      store,
      limit: 5,
      failMode: 'closed',
      timeoutMs: 20,
      breaker: { failureThreshold: 2, coolDownMs: 60_000 },
      onStoreError: (e) => events.push(e),
      logger: recordingLogger(),
    });
    const decisions = await Promise.all([limiter.consume('a'), limiter.consume('b'), limiter.consume('c')]);
    expect(decisions.map((d) => d.reason)).toEqual(['fail-closed', 'fail-closed', 'fail-closed']);
    expect(events).toHaveLength(1);
    expect((events[0].error as FloodgateError).code).toBe('FG_STORE_TIMEOUT');
    // Open now: answered without calling the store at all.
    expect((await limiter.consume('d')).reason).toBe('fail-closed');
    expect(store.calls).toBe(3);
  });
});
