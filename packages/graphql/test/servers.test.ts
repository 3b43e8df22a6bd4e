// The three plugins on real servers over loopback HTTP, on MemoryStore and on a real Redis: requested against actual cost, the per-operation maximum, throttling, the dry run and extensions.cost in Shopify's shape.
import { MemoryStore, RedisStore, type Store } from '@floodgate/core';
import { startRedis, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import { post, startServer, type Running, type ServerName } from './harness';

let redis: RedisServer;
let client: Redis;
beforeAll(async () => {
  redis = await startRedis();
  client = redis.client({ autoResendUnfulfilledCommands: false });
  await client.ping();
});
afterAll(async () => {
  client.disconnect();
  await redis.stop();
});

const prefix = () => `gql${Math.random().toString(36).slice(2, 10)}`;
const stores: [string, () => Store][] = [
  ['memory', () => new MemoryStore()],
  // A loaded 2-core machine can take longer than the default store deadline: these tests are about counts, not deadlines.
  ['redis', () => new RedisStore({ client, timeoutMs: 5_000 })],
];
const servers: ServerName[] = ['yoga', 'apollo', 'mercurius'];
const ITEMS_10 = '{ items(first: 10) { id name } }';
const DRY = { 'x-floodgate-dry-run': '1' };

describe.each(servers)('%s', (name) => {
  describe.each(stores)('on %s', (_storeName, makeStore) => {
    let server: Running | undefined;
    afterEach(async () => {
      await server?.close();
      server = undefined;
    });
    const start = async (options: object, available = 3) => (server = await startServer(name, { store: makeStore(), prefix: prefix(), limit: 100, windowMs: '1m', ...options }, available));

    it('reserves the requested cost 10, settles the actual cost 3, and reports both in extensions.cost', async () => {
      const s = await start({});
      const first = await post(s.url, ITEMS_10);
      expect(first.status).toBe(200);
      expect(first.body.errors).toBeUndefined();
      expect((first.body.data as { items: unknown[] }).items).toHaveLength(3);
      // The headers are the reservation's: 10 drawn before execution.
      expect(first.headers['ratelimit-remaining']).toBe('90');
      expect(first.body.extensions?.cost).toEqual({
        requestedQueryCost: 10,
        actualQueryCost: 3,
        throttleStatus: { maximumAvailable: 100, currentlyAvailable: 97, restoreRate: 1.667 },
      });
      // Settled: a dry run (which charges nothing) sees 3 charged, not 10.
      const dry = await post(s.url, ITEMS_10, DRY);
      expect(dry.body.extensions?.cost).toEqual({ requestedQueryCost: 10, actualQueryCost: null, throttleStatus: { maximumAvailable: 100, currentlyAvailable: 97, restoreRate: 1.667 } });
      expect(s.calls.items).toBe(1);
    });

    it('refuses an operation over maxOperationCost before execution: the resolver never runs and nothing is charged', async () => {
      const s = await start({ maxOperationCost: 50 });
      const over = await post(s.url, '{ items(first: 51) { id } }');
      expect(over.body.errors).toHaveLength(1);
      expect(over.body.errors![0].extensions?.code).toBe('MAX_COST_EXCEEDED');
      expect(over.body.data ?? null).toBeNull();
      expect(over.body.extensions?.cost).toEqual({ requestedQueryCost: 51, actualQueryCost: null, throttleStatus: null });
      expect(s.calls.items).toBe(0);
      // A hostile size (Int's largest) is bounded and refused the same way.
      const hostile = await post(s.url, '{ items(first: 2147483647) { id name } }');
      expect(hostile.body.errors![0].extensions?.code).toBe('MAX_COST_EXCEEDED');
      expect(hostile.body.extensions?.cost?.requestedQueryCost).toBe(2147483647);
      expect(s.calls.items).toBe(0);
      const dry = await post(s.url, ITEMS_10, DRY);
      expect(dry.body.extensions?.cost?.throttleStatus?.currentlyAvailable).toBe(100);
      // At the maximum it runs.
      const at = await post(s.url, '{ items(first: 50) { id } }');
      expect(at.body.errors).toBeUndefined();
      expect(s.calls.items).toBe(1);
    });

    it('refuses an operation that does not fit with THROTTLED, its retry time and Retry-After; the resolver does not run', async () => {
      const s = await start({}, 40);
      for (let i = 0; i < 2; i++) expect((await post(s.url, '{ items(first: 40) { id } }')).body.errors).toBeUndefined();
      const third = await post(s.url, '{ items(first: 40) { id } }');
      expect(third.status).toBe(429);
      expect(third.body.errors![0].extensions?.code).toBe('THROTTLED');
      expect(third.body.errors![0].extensions?.retryAfterMs).toBeGreaterThan(0);
      expect(Number(third.headers['retry-after'])).toBeGreaterThan(0);
      expect(third.body.extensions?.cost).toMatchObject({ requestedQueryCost: 40, actualQueryCost: null, throttleStatus: { maximumAvailable: 100, currentlyAvailable: 20 } });
      expect(s.calls.items).toBe(2);
      // What still fits runs.
      expect((await post(s.url, '{ items(first: 20) { id } }')).body.errors).toBeUndefined();
      expect(s.calls.items).toBe(3);
    });

    it('settles 20 concurrent operations exactly: each reserves 10 and is charged its 3', async () => {
      const s = await start({ limit: 1000 });
      const answers = await Promise.all(Array.from({ length: 20 }, () => post(s.url, ITEMS_10)));
      expect(answers.every((a) => a.body.errors === undefined && a.body.extensions?.cost?.actualQueryCost === 3)).toBe(true);
      const dry = await post(s.url, ITEMS_10, DRY);
      expect(dry.body.extensions?.cost?.throttleStatus?.currentlyAvailable).toBe(1000 - 20 * 3);
      expect(s.calls.items).toBe(20);
    });

    it('answers a dry run with the cost only: even a mutation never runs, and nothing is charged', async () => {
      const s = await start({});
      const dry = await post(s.url, 'mutation { touch }', DRY);
      expect(dry.body.data ?? null).toBeNull();
      expect(dry.body.extensions?.cost).toEqual({ requestedQueryCost: 10, actualQueryCost: null, throttleStatus: { maximumAvailable: 100, currentlyAvailable: 100, restoreRate: 1.667 } });
      const named = await post(s.url, 'query A { items(first: 5) { id } } mutation B { touch }', DRY, { operationName: 'A' });
      expect(named.body.extensions?.cost?.requestedQueryCost).toBe(5);
      expect(s.calls).toEqual({ items: 0, touch: 0 });
    });
  });
});
