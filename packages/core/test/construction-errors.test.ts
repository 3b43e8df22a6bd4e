// Bad options throw at construction: FloodgateError FG_INVALID_OPTION naming the option, the value given and the valid range.
import { Redis } from 'ioredis';
import { createClient, createCluster } from 'redis';
import { createIdentify, createLimiter, DurableObjectStore, FloodgateError, HotKeyStore, MemoryStore, RedisStore } from '../src';
import type { CreateLimiterOptions, MemoryStoreOptions, RedisStoreOptions } from '../src';
import { createHttpLimiter } from '../src/http';

interface Row {
  /** What is wrong. */
  label: string;
  build: () => unknown;
  /** The option the error must name. */
  option: string;
  /** How the bad value must appear after "got ". */
  shown: string;
  /** A fragment of the valid range the message must state. */
  range: string;
}

const UNITS = 'a whole number from 1 to 1000000000';
const DURATION = 'a whole number of milliseconds from 1 to 31536000000';
const RATE = 'a number above 0 and at most 1000000';
// One message for every clock, store and logger option, wherever it is given.
const CLOCK = 'a function returning the time in ms, never going back';
const STORE = 'a Store such as new MemoryStore() or new RedisStore({ client })';
const LOGGER = 'an object with warn(message) and error(message) functions, such as console';

const limiter = (options: unknown) => () => createLimiter(options as CreateLimiterOptions);
const memory = (options: unknown) => () => new MemoryStore(options as MemoryStoreOptions);
// A client that never connects (lazyConnect, and no command is sent): only its shape is checked.
const idle = new Redis({ host: '127.0.0.1', port: 1, lazyConnect: true, autoResendUnfulfilledCommands: false });
// node-redis clients that are never connected: only their shape is checked.
const nodeIdle = createClient({ url: 'redis://127.0.0.1:1' });
const nodeClusterIdle = createCluster({ rootNodes: [{ url: 'redis://127.0.0.1:1' }] });
const redis = (options: unknown) => () => new RedisStore(options as RedisStoreOptions);

const ROWS: Row[] = [
  { label: 'limit 0', build: limiter({ limit: 0 }), option: 'options.limit', shown: '0', range: UNITS },
  { label: 'negative limit', build: limiter({ limit: -5 }), option: 'options.limit', shown: '-5', range: UNITS },
  { label: 'fractional limit', build: limiter({ limit: 1.5 }), option: 'options.limit', shown: '1.5', range: UNITS },
  { label: 'NaN limit', build: limiter({ limit: Number.NaN }), option: 'options.limit', shown: 'NaN', range: UNITS },
  { label: 'limit as a string', build: limiter({ limit: '10' }), option: 'options.limit', shown: '"10"', range: UNITS },
  { label: 'limit above the maximum', build: limiter({ limit: 1_000_000_001 }), option: 'options.limit', shown: '1000000001', range: UNITS },
  { label: 'no limit for a window algorithm', build: limiter({ algorithm: 'fixed-window' }), option: 'options.limit', shown: 'undefined', range: UNITS },
  { label: 'windowMs 0', build: limiter({ limit: 5, windowMs: 0 }), option: 'options.windowMs', shown: '0', range: DURATION },
  { label: 'negative windowMs', build: limiter({ limit: 5, windowMs: -1000 }), option: 'options.windowMs', shown: '-1000', range: DURATION },
  { label: 'fractional windowMs', build: limiter({ limit: 5, windowMs: 1.5 }), option: 'options.windowMs', shown: '1.5', range: DURATION },
  { label: 'infinite windowMs', build: limiter({ limit: 5, windowMs: Infinity }), option: 'options.windowMs', shown: 'Infinity', range: DURATION },
  { label: 'unknown duration unit', build: limiter({ limit: 5, windowMs: '1 fortnight' }), option: 'options.windowMs', shown: '"1 fortnight"', range: "'30s'" },
  { label: 'windowMs over a year', build: limiter({ limit: 5, windowMs: '366d' }), option: 'options.windowMs', shown: '"366d"', range: DURATION },
  { label: 'unknown algorithm', build: limiter({ limit: 5, algorithm: 'leaky-bucket' }), option: 'options.algorithm', shown: '"leaky-bucket"', range: 'one of fixed-window, sliding-window-log, sliding-window-counter, token-bucket, gcra' },
  { label: 'burst 0', build: limiter({ algorithm: 'token-bucket', burst: 0, refillPerSecond: 1 }), option: 'options.burst', shown: '0', range: UNITS },
  { label: 'fractional burst', build: limiter({ algorithm: 'gcra', burst: 2.5, refillPerSecond: 1 }), option: 'options.burst', shown: '2.5', range: UNITS },
  { label: 'no burst nor limit', build: limiter({ algorithm: 'gcra', refillPerSecond: 1 }), option: 'options.burst', shown: 'undefined', range: 'a whole number from 1' },
  { label: 'refill 0', build: limiter({ algorithm: 'token-bucket', burst: 5, refillPerSecond: 0 }), option: 'options.refillPerSecond', shown: '0', range: RATE },
  { label: 'negative refill', build: limiter({ algorithm: 'gcra', burst: 5, refillPerSecond: -1 }), option: 'options.refillPerSecond', shown: '-1', range: RATE },
  { label: 'infinite refill', build: limiter({ algorithm: 'gcra', burst: 5, refillPerSecond: Infinity }), option: 'options.refillPerSecond', shown: 'Infinity', range: RATE },
  { label: 'NaN refill', build: limiter({ algorithm: 'token-bucket', burst: 5, refillPerSecond: Number.NaN }), option: 'options.refillPerSecond', shown: 'NaN', range: RATE },
  { label: 'refill above the maximum', build: limiter({ algorithm: 'token-bucket', burst: 5, refillPerSecond: 2e6 }), option: 'options.refillPerSecond', shown: '2000000', range: RATE },
  { label: 'burst with a window algorithm', build: limiter({ algorithm: 'fixed-window', limit: 5, burst: 10 }), option: 'options.burst', shown: '10', range: 'token-bucket and gcra' },
  // Past 365 days to refill the burst, PEXPIRE overflowed in Redis (every call failed: fail-open forever) while memory limited.
  { label: 'token-bucket refill too slow for Redis TTLs', build: limiter({ algorithm: 'token-bucket', burst: 10, refillPerSecond: 1e-14 }), option: 'options.refillPerSecond', shown: '1e-14', range: '(a burst of 10 refilled within 365 days) to 1000000' },
  { label: 'gcra refill too slow for Redis TTLs', build: limiter({ algorithm: 'gcra', limits: [{ burst: 1000, refillPerSecond: 1e-5 }] }), option: 'limits[0].refillPerSecond', shown: '0.00001', range: 'a burst of 1000 refilled within 365 days' },
  // One ZSET member per unit: a limit of 1e9 let one request write 112 MB and stall Redis for seconds.
  { label: 'sliding-window-log limit above its own maximum', build: limiter({ algorithm: 'sliding-window-log', limit: 1_000_000 }), option: 'options.limit', shown: '1000000', range: 'a whole number from 1 to 10000 for sliding-window-log' },
  { label: 'refillPerSecond with a window algorithm', build: limiter({ algorithm: 'sliding-window-log', limit: 5, refillPerSecond: 2 }), option: 'options.refillPerSecond', shown: '2', range: 'token-bucket and gcra' },
  { label: 'name with a space', build: limiter({ limit: 5, name: 'per minute' }), option: 'options.name', shown: '"per minute"', range: '[A-Za-z0-9_.-]{1,64}' },
  { label: 'empty name', build: limiter({ limit: 5, name: '' }), option: 'options.name', shown: '""', range: '[A-Za-z0-9_.-]{1,64}' },
  { label: 'prefix with a colon', build: limiter({ limit: 5, prefix: 'a:b' }), option: 'prefix', shown: '"a:b"', range: '[A-Za-z0-9_.-]{1,32}' },
  { label: 'prefix too long', build: limiter({ limit: 5, prefix: 'p'.repeat(33) }), option: 'prefix', shown: `"${'p'.repeat(33)}"`, range: '[A-Za-z0-9_.-]{1,32}' },
  { label: 'prefix a number', build: limiter({ limit: 5, prefix: 5 }), option: 'prefix', shown: '5', range: '[A-Za-z0-9_.-]{1,32}' },
  { label: 'empty limits', build: limiter({ limits: [] }), option: 'limits', shown: '[]', range: 'an array of 1 to 16 limit objects' },
  { label: 'limits not an array', build: limiter({ limits: 'many' }), option: 'limits', shown: '"many"', range: 'an array of 1 to 16 limit objects' },
  { label: '17 limits', build: limiter({ limits: Array.from({ length: 17 }, (_, i) => ({ name: `l${i}`, limit: 5 })) }), option: 'limits', shown: '[{"name":"l0"', range: 'an array of 1 to 16 limit objects' },
  { label: 'a bad limit inside limits', build: limiter({ limits: [{ limit: 5 }, { limit: 0 }] }), option: 'limits[1].limit', shown: '0', range: UNITS },
  { label: 'a bad window inside limits', build: limiter({ limits: [{ limit: 5, windowMs: '5 s' }, { limit: 5, windowMs: 'soon' }] }), option: 'limits[1].windowMs', shown: '"soon"', range: DURATION },
  { label: 'duplicate limit names', build: limiter({ limits: [{ name: 'a', limit: 5 }, { name: 'a', limit: 9 }] }), option: 'limits', shown: '"a"', range: 'unique `name`s' },
  { label: 'top-level limit with limits', build: limiter({ limit: 5, limits: [{ limit: 5 }] }), option: 'limit', shown: '5', range: 'when `limits` is given' },
  { label: 'a store that is not one', build: limiter({ limit: 5, store: {} }), option: 'store', shown: '{}', range: STORE },
  { label: 'HotKeyStore store that is not one', build: () => new HotKeyStore({ store: {} } as never), option: 'store', shown: '{}', range: STORE },
  { label: 'logger without error', build: limiter({ limit: 5, logger: { warn: () => undefined } }), option: 'logger', shown: '{}', range: LOGGER },
  { label: 'identity logger without error', build: () => createIdentify({ logger: { warn: () => undefined } as never }), option: 'logger', shown: '{}', range: LOGGER },
  { label: 'unknown failMode', build: limiter({ limit: 5, failMode: 'sideways' }), option: 'failMode', shown: '"sideways"', range: 'one of open, closed, local' },
  { label: 'instances 0', build: limiter({ limit: 5, instances: 0 }), option: 'instances', shown: '0', range: 'a whole number from 1 to 10000' },
  { label: 'negative blockCacheSize', build: limiter({ limit: 5, blockCacheSize: -1 }), option: 'blockCacheSize', shown: '-1', range: 'a whole number from 0' },
  { label: 'fractional blockCacheSize', build: limiter({ limit: 5, blockCacheSize: 1.5 }), option: 'blockCacheSize', shown: '1.5', range: 'a whole number from 0' },
  { label: 'blockCacheSize as a string', build: limiter({ limit: 5, blockCacheSize: 'big' }), option: 'blockCacheSize', shown: '"big"', range: 'a whole number from 0' },
  { label: 'clock not a function', build: limiter({ limit: 5, clock: 'now' }), option: 'clock', shown: '"now"', range: CLOCK },
  { label: 'hotKeys clock not a function', build: limiter({ limit: 5, hotKeys: { clock: 5 } }), option: 'hotKeys.clock', shown: '5', range: CLOCK },
  { label: 'hotKeys threshold 0', build: limiter({ limit: 5, hotKeys: { threshold: 0 } }), option: 'hotKeys.threshold', shown: '0', range: UNITS },
  { label: 'HotKeyStore clock not a function', build: () => new HotKeyStore({ store: new MemoryStore(), clock: 5 } as never), option: 'clock', shown: '5', range: CLOCK },
  { label: 'identity clock not a function', build: () => createIdentify({ clock: 5 as never }), option: 'clock', shown: '5', range: CLOCK },
  { label: 'MemoryStore maxKeys 0', build: memory({ maxKeys: 0 }), option: 'maxKeys', shown: '0', range: 'a whole number from 1 to 100000000' },
  { label: 'MemoryStore fractional maxKeys', build: memory({ maxKeys: 2.5 }), option: 'maxKeys', shown: '2.5', range: 'a whole number from 1 to 100000000' },
  { label: 'MemoryStore clock not a function', build: memory({ clock: 5 }), option: 'clock', shown: '5', range: CLOCK },
  { label: 'RedisStore without a client', build: redis({}), option: 'client', shown: 'undefined', range: 'an ioredis (or iovalkey) Redis or Cluster, a node-redis createClient(), createCluster() or createSentinel() client, a Valkey GLIDE GlideClient or GlideClusterClient, or an HTTP client such as @upstash/redis' },
  { label: 'RedisStore client not a client', build: redis({ client: { get: 1 } }), option: 'client', shown: '{"get":1}', range: 'an ioredis (or iovalkey) Redis or Cluster, a node-redis createClient(), createCluster() or createSentinel() client, a Valkey GLIDE GlideClient or GlideClusterClient, or an HTTP client such as @upstash/redis' },
  { label: 'RedisStore timeoutMs 0', build: redis({ client: idle, timeoutMs: 0 }), option: 'timeoutMs', shown: '0', range: 'from 1 to 60000' },
  { label: 'RedisStore timeoutMs above a minute', build: redis({ client: idle, timeoutMs: 60_001 }), option: 'timeoutMs', shown: '60001', range: 'from 1 to 60000' },
  { label: 'RedisStore timeoutMs not a duration', build: redis({ client: idle, timeoutMs: 'soon' }), option: 'timeoutMs', shown: '"soon"', range: 'from 1 to 60000' },
  { label: 'RedisStore test clock not a function', build: redis({ client: idle, UNSAFE_testClock: 5 }), option: 'UNSAFE_testClock', shown: '5', range: CLOCK },
  // Reserve, then settle: the bound on a settle and how long a reservation stays settleable.
  { label: 'settle not an object', build: limiter({ limit: 5, settle: 5 }), option: 'settle', shown: '5', range: 'an object such as { maxCost: 4000 }' },
  { label: 'settle.maxCost 0', build: limiter({ limit: 5, settle: { maxCost: 0 } }), option: 'settle.maxCost', shown: '0', range: UNITS },
  { label: 'settle.maxCost fractional', build: limiter({ limit: 5, settle: { maxCost: 2.5 } }), option: 'settle.maxCost', shown: '2.5', range: UNITS },
  { label: 'settle.maxCost past what sliding-window-log stores', build: limiter({ algorithm: 'sliding-window-log', limit: 5, settle: { maxCost: 10_001 } }), option: 'settle.maxCost', shown: '10001', range: 'a whole number from 1 to 10000' },
  { label: 'settle.withinMs under a second', build: limiter({ limit: 5, settle: { withinMs: 999 } }), option: 'settle.withinMs', shown: '999', range: '86400000' },
  { label: 'settle.withinMs over a day', build: limiter({ limit: 5, settle: { withinMs: '2d' } }), option: 'settle.withinMs', shown: '"2d"', range: '86400000' },
];

afterAll(() => idle.disconnect());

describe('invalid options throw FG_INVALID_OPTION at construction', () => {
  it.each(ROWS.map((row) => [row.label, row] as const))('%s', (_label, row) => {
    let thrown: unknown;
    try {
      row.build();
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(FloodgateError);
    const error = thrown as FloodgateError;
    expect({ code: error.code, option: error.option }).toEqual({ code: 'FG_INVALID_OPTION', option: row.option });
    expect(error.message).toContain(`\`${row.option}\``);
    expect(error.message).toContain(`got ${row.shown}`);
    expect(error.message).toContain(row.range);
  });
});

describe('the same options, valid, construct', () => {
  it('a valid value next to each bad one is accepted, and is the value used', async () => {
    const big = createLimiter({ limit: 1_000_000_000, windowMs: '365d', prefix: 'p'.repeat(32), name: 'n'.repeat(64) });
    expect(big.options.prefix).toBe('p'.repeat(32));
    expect(big.options.limits.map((l) => [l.name, l.limit, l.windowMs])).toEqual([['n'.repeat(64), 1_000_000_000, 31_536_000_000]]);
    const gcra = createLimiter({ algorithm: 'gcra', burst: 1, refillPerSecond: 1_000_000 });
    expect(gcra.options.limits.map((l) => [l.algorithm, l.limit])).toEqual([['gcra', 1]]);
    const many = createLimiter({ limits: Array.from({ length: 16 }, (_, i) => ({ name: `l${i}`, limit: 5 })) });
    expect(many.options.limits.map((l) => l.name)).toEqual(Array.from({ length: 16 }, (_, i) => `l${i}`));
    const still = createLimiter({ limit: 5, blockCacheSize: 0, clock: () => 0 });
    expect((await still.consume('x')).remaining).toBe(4);
    // maxKeys 1: a second subject evicts the first, whose count starts again; a refused subject's
    // state is held apart, where other subjects do not evict it (docs/auth.md#lock-outs-under-a-flood).
    const tiny = createLimiter({ store: new MemoryStore({ maxKeys: 1, clock: () => 0 }), limit: 1, blockCacheSize: 0 });
    expect([(await tiny.consume('a')).allowed, (await tiny.consume('b')).allowed, (await tiny.consume('a')).allowed]).toEqual([true, true, true]);
    expect([(await tiny.consume('c')).allowed, (await tiny.consume('c')).allowed, (await tiny.consume('d')).allowed, (await tiny.consume('c')).allowed]).toEqual([true, false, true, false]);
    expect(new RedisStore({ client: idle, timeoutMs: '1m', UNSAFE_testClock: () => 0 }).timeoutMs).toBe(60_000);
  });
});

describe('unknown option names throw FG_UNKNOWN_OPTION at construction, naming the option meant', () => {
  it.each([
    ['createLimiter', limiter({ limit: 5, failmode: 'closed' }), 'failmode', 'failMode'],
    ['createLimiter', limiter({ max: 5 }), 'max', 'limit'],
    ['createLimiter limits[i]', limiter({ limits: [{ name: 'a', limt: 5 }] }), 'limt', 'limit'],
    ['MemoryStore', memory({ maxkeys: 5 }), 'maxkeys', 'maxKeys'],
    ['RedisStore', redis({ client: idle, timeout: 50 }), 'timeout', 'timeoutMs'],
    ['RedisStore', redis({ client: idle, coalesse: 'turn' }), 'coalesse', 'coalesce'],
    ['createLimiter settle', limiter({ limit: 5, settle: { maxcost: 5 } }), 'maxcost', 'maxCost'],
  ])('%s: `%s`', (_where, build, option, meant) => {
    expect(build).toThrow(expect.objectContaining({ code: 'FG_UNKNOWN_OPTION', option, message: expect.stringContaining(`did you mean \`${meant}\`?`) }));
  });

  it('names a client passed where the options belong, and a store instance without dumping it', () => {
    expect(() => new RedisStore(idle as never)).toThrow(/expected an options object: new RedisStore\(\{ client \}\)/);
    let message = '';
    try {
      createLimiter({ limit: 5, store: idle as never });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain('got a Redis client; expected a Store such as new MemoryStore() or new RedisStore({ client })');
    expect(message.length).toBeLessThan(400);
  });

  it.each([
    ['a node-redis client', nodeIdle],
    ['a node-redis cluster', nodeClusterIdle],
  ])('names %s passed where the options belong, or as the store, in a short message', (_label, client) => {
    expect(() => new RedisStore(client as never)).toThrow(/got a Redis client; expected an options object: new RedisStore\(\{ client \}\)/);
    const message = (() => {
      try {
        createLimiter({ limit: 5, store: client as never });
      } catch (error) {
        return (error as Error).message;
      }
      return '';
    })();
    expect(message).toContain('got a Redis client; expected a Store such as new MemoryStore() or new RedisStore({ client })');
    expect(message.length).toBeLessThan(400);
  });

  it('takes a node-redis client and cluster by shape, typed without a cast', () => {
    expect(new RedisStore({ client: createClient({ url: 'redis://127.0.0.1:1' }) }).name).toBe('redis');
    expect(new RedisStore({ client: createCluster({ rootNodes: [{ url: 'redis://127.0.0.1:1' }] }) }).name).toBe('redis');
  });
});

describe('settle and countOnly on one route', () => {
  it('are refused at construction: both would adjust the same charge', () => {
    expect(() => createHttpLimiter({ limit: 5, countOnly: 'failed', settle: {} })).toThrow(expect.objectContaining({ code: 'FG_INVALID_OPTION', option: 'settle' }));
    expect(() => createHttpLimiter({ limit: 5, countOnly: 'failed' })).not.toThrow();
    expect(() => createHttpLimiter({ limit: 5, settle: {} })).not.toThrow();
  });
});

describe('edge stores at construction', () => {
  it('DurableObjectStore names a bad namespace, shards, name and timeoutMs', () => {
    const namespace = { idFromName: () => 'id', get: () => ({ fetch: () => Promise.reject(new Error('unused')) }) };
    const bad: [object, string][] = [
      [{}, 'namespace'],
      [{ namespace: { get: () => undefined } }, 'namespace'],
      [{ namespace, shards: 0 }, 'shards'],
      [{ namespace, shards: 1025 }, 'shards'],
      [{ namespace, name: 'a:b' }, 'name'],
      [{ namespace, timeoutMs: 0 }, 'timeoutMs'],
    ];
    for (const [options, option] of bad) {
      expect(() => new DurableObjectStore(options as never)).toThrow(expect.objectContaining({ code: 'FG_INVALID_OPTION', message: expect.stringContaining(`\`${option}\``) }));
    }
    // A typo is an unknown option that suggests the intended one.
    expect(() => new DurableObjectStore({ namespace, shard: 4 } as never)).toThrow(expect.objectContaining({ code: 'FG_UNKNOWN_OPTION', message: expect.stringContaining('did you mean `shards`?') }));
  });
});
