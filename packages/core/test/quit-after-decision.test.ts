// A script's last decision, then `await client.quit()` (the README's framework-free example): the fleet announcement the decision started writes nothing after QUIT, so quit() resolves instead of failing on a closed socket.
import { startRedis, type RedisServer } from '@floodgate/testing';
import { createLimiter, RedisStore } from '../src';

let server: RedisServer;

beforeAll(async () => {
  server = await startRedis();
}, 30_000);

afterAll(async () => {
  await server?.stop();
});

it('quit() right after a decision resolves: the announcement in flight sends no command after QUIT', async () => {
  const outcomes: string[] = [];
  // Each round is a new process's first decision: the announcement starts with it (TIME out, ZADD... next).
  for (let round = 0; round < 20; round++) {
    const client = server.client({ autoResendUnfulfilledCommands: false, lazyConnect: false });
    client.on('error', () => {});
    const limiter = createLimiter({ store: new RedisStore({ client, timeoutMs: 30_000 }), limit: 100, windowMs: '1m', prefix: `qa${round}` });
    const decision = await limiter.consume('user:42');
    expect(decision.allowed).toBe(true);
    outcomes.push(await client.quit().then(String, (error: Error) => `failed: ${error.message}`));
  }
  expect(outcomes).toEqual(Array.from({ length: 20 }, () => 'OK'));
}, 60_000);
