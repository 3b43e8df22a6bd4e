// The conformance harness's expiry watch: it names a key Redis expired on its real clock, and only such a key.
import { startRedis, waitFor, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import { RedisStore, type Store } from '../../src';
import { watchExpiry, type ExpiryWatch } from './expiry-watch';
import { runScenario, scenarioNamed } from './scenarios';

let server: RedisServer;
let client: Redis;
let watch: ExpiryWatch;

beforeAll(async () => {
  server = await startRedis();
  client = server.client({ autoResendUnfulfilledCommands: false });
  watch = await watchExpiry(server);
}, 30_000);

afterAll(async () => {
  watch?.close();
  client?.disconnect();
  await server?.stop();
});

it('names a prefix whose key Redis expired (read lazily after its TTL), and not one whose key lives or was deleted', async () => {
  await client.set('gone-1-0:k', '1', 'PX', 20);
  await client.set('kept-1-0:k', '1', 'PX', 600_000);
  await client.set('deleted-1-0:k', '1', 'PX', 600_000);
  await client.del('deleted-1-0:k');
  // Past its TTL the key is gone on access (lazy expiry), which publishes the event as active expiry does.
  await waitFor('the key to expire', async () => (await client.exists('gone-1-0:k')) === 0, 10_000);
  expect(await watch.expiredUnder('gone-1-0:')).toBe(true);
  expect(await watch.expiredUnder('gone-1-1')).toBe(false);
  expect(await watch.expiredUnder('kept-1-0:')).toBe(false);
  expect(await watch.expiredUnder('deleted-1-0:')).toBe(false);
});

/**
 * A store that, in its first life only, stops before its 10th call until Redis has expired every key
 * under `prefix` (what a machine slowed many times over does between two steps of a scenario).
 */
function slowFirstStore(prefix: string) {
  let made = 0;
  return (clock: () => number): Store => {
    const store = new RedisStore({ client, timeoutMs: 30_000, UNSAFE_testClock: clock });
    if (made++ > 0) return store;
    let calls = 0;
    const evaluate = store.evaluate.bind(store);
    store.evaluate = async (request) => {
      if (++calls === 10) {
        // PTTL reads a key past its TTL as gone, and expires it (lazily) on the way.
        // The scenario's state keys (`<prefix>N:{subject}:...`), not its fleet count (`<prefix>N.instances`, 15 s).
        const keys = await client.keys(`${prefix}*:*`);
        expect(keys.length).toBeGreaterThan(0);
        await waitFor('the keys to expire in real time', async () => (await Promise.all(keys.map((k) => client.pttl(k)))).every((t) => t === -2), 20_000);
      }
      return evaluate(request);
    };
    // The limiter asks through evaluate when the store has no sink entry (Store.evaluateTo): the wait above is on its path.
    Object.assign(store, { evaluateTo: undefined });
    return store;
  };
}

describe('a scenario whose keys Redis expired in real time', () => {
  // token-bucket, burst 5 refilling 1 a second: a key with a few seconds' TTL after its first consume.
  const scenario = scenarioNamed('token-bucket: peek never consumes');

  it('runs again under a fresh prefix, and passes', async () => {
    const base = `ew-${Math.random().toString(36).slice(2, 8)}`;
    await runScenario(scenario, base, slowFirstStore(`${base}-`), { expiry: () => watch });
    expect(await watch.expiredUnder(`${base}-`)).toBe(true); // the first attempt's key did expire
    expect((await client.keys(`${base}r1-*`)).length).toBeGreaterThan(0); // and a second attempt ran
  }, 60_000);

  it('fails as before without a watch: the retry is for an expiry only', async () => {
    const base = `ew-${Math.random().toString(36).slice(2, 8)}`;
    await expect(runScenario(scenario, base, slowFirstStore(`${base}-`))).rejects.toThrow(/remaining/);
  }, 60_000);
});
