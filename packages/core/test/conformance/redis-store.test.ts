// The conformance table against RedisStore on a real redis-server through each supported client (ioredis 5 and 6, node-redis), its TIME replaced by the same fake clock; then every key's TTL.
import { startRedis, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import { RedisStore } from '../../src';
import { CLIENT_KINDS, connectClient, type ConnectedClient, kindTag } from '../support/redis-clients';
import { watchExpiry, type ExpiryWatch } from './expiry-watch';
import { describeConformance } from './scenarios';

let server: RedisServer;
let client: Redis;
let expiry: ExpiryWatch | undefined;
const clients = new Map<string, ConnectedClient>();
const prefix = `conf-${Math.random().toString(36).slice(2, 10)}`;

beforeAll(async () => {
  server = await startRedis();
  client = server.client({ autoResendUnfulfilledCommands: false });
  for (const kind of CLIENT_KINDS) clients.set(kind, await connectClient(kind, server));
  expiry = await watchExpiry(server);
}, 30_000);

afterAll(async () => {
  expiry?.close();
  for (const connected of clients.values()) await connected.close();
  client?.disconnect();
  await server?.stop();
});

// A generous timeout: the machine is shared, and a timed-out call would fail the scenario anyway.
describe.each(CLIENT_KINDS)('on %s', (kind) => {
  describeConformance('conformance: RedisStore', (clock) => new RedisStore({ client: clients.get(kind)!.client, timeoutMs: 30_000, UNSAFE_testClock: clock }), {
    prefix: `${prefix}-${kindTag(kind)}`,
    expiry: () => expiry,
  });
});

describe('after the conformance suite', () => {
  it('every key the scripts wrote has a TTL', async () => {
    const keys: string[] = [];
    let cursor = '0';
    do {
      const [next, batch] = await client.scan(cursor, 'MATCH', `${prefix}-*`, 'COUNT', 1000);
      cursor = next;
      keys.push(...batch);
    } while (cursor !== '0');
    const ttls = await Promise.all(keys.map((key) => client.pttl(key)));
    // -1: a key without an expiry. (-2, a key that expired between SCAN and PTTL, had one.)
    expect(keys.filter((_, i) => ttls[i] === -1)).toEqual([]);
    // Every scenario consumes at some point, and most of its keys live far beyond this run.
    expect(ttls.filter((ttl) => ttl > 0).length).toBeGreaterThanOrEqual(38 * CLIENT_KINDS.length);
  });
});
