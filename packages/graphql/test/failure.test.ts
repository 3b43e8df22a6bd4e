// A killed redis-server under the three servers: failMode 'closed' refuses with SERVICE_UNAVAILABLE (503) before execution, 'open' runs the operation with no made-up throttleStatus.
import { once } from 'node:events';
import { RedisStore } from '@floodgate/core';
import { startRedis, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import { post, startServer, type Running, type ServerName } from './harness';

let redis: RedisServer;
let client: Redis;
beforeAll(async () => {
  redis = await startRedis();
  // No reconnecting and no offline queue: once the server is killed every call fails at once ('Connection is closed').
  client = redis.client({ autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
  if (client.status !== 'ready') await once(client, 'ready');
  await client.ping();
  await redis.kill();
  if (client.status !== 'end') await once(client, 'end');
});
afterAll(async () => {
  // Already ended with its server; disconnect() on an ended ioredis client leaves a timer behind.
  if (client.status !== 'end') client.disconnect();
  await redis.stop();
});

const servers: ServerName[] = ['yoga', 'apollo', 'mercurius'];

describe.each(servers)('%s', (name) => {
  let server: Running | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it("failMode 'closed': SERVICE_UNAVAILABLE, 503, and the resolver does not run", async () => {
    const s = (server = await startServer(name, { store: new RedisStore({ client }), limit: 100, windowMs: '1m', failMode: 'closed', logger: { warn() {}, error() {} } }));
    const answer = await post(s.url, '{ items(first: 10) { id } }');
    expect(answer.status).toBe(503);
    expect(answer.body.errors?.[0].extensions?.code).toBe('SERVICE_UNAVAILABLE');
    expect(answer.body.extensions?.cost).toEqual({ requestedQueryCost: 10, actualQueryCost: null, throttleStatus: null });
    expect(s.calls.items).toBe(0);
  });

  it("failMode 'open': the operation runs, extensions.cost has no throttleStatus to make up", async () => {
    const s = (server = await startServer(name, { store: new RedisStore({ client }), limit: 100, windowMs: '1m', failMode: 'open', logger: { warn() {}, error() {} } }));
    const answer = await post(s.url, '{ items(first: 10) { id } }');
    expect(answer.body.errors).toBeUndefined();
    expect(answer.body.extensions?.cost).toEqual({ requestedQueryCost: 10, actualQueryCost: 3, throttleStatus: null });
    expect(s.calls.items).toBe(1);
  });
});
