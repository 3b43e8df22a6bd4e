// How RedisStore hands a script call to ioredis: the Buffer twins (evalshaBuffer, evalBuffer: no conversion pass over the reply) with every argument a string, and what the reply still means that way.
import { Redis } from 'ioredis';
import { createLimiter, RedisStore, subjectKey } from '../src';
import { serverWithClient } from './support/redis-clients';

const redis = serverWithClient();
const rnd = () => `is-${Math.random().toString(36).slice(2, 10)}`;

/** A client of its own whose four script methods record the arguments they were given. */
function recorded(): { client: Redis; calls: { method: string; types: string[] }[] } {
  const client = new Redis({ host: redis.server.host, port: redis.server.port, autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 1 });
  const calls: { method: string; types: string[] }[] = [];
  for (const method of ['evalsha', 'eval', 'evalshaBuffer', 'evalBuffer'] as const) {
    // evalBuffer is made at runtime like every command's Buffer twin, but ioredis's types leave it out.
    const original = ((client as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>)[method]).bind(client);
    Object.assign(client, { [method]: (...args: unknown[]) => (calls.push({ method, types: args.map((a) => typeof a) }), original(...args)) });
  }
  return { client, calls };
}

describe('RedisStore on ioredis', () => {
  it('sends each decision with evalshaBuffer, every argument a string, and reads the reply as before', async () => {
    const { client, calls } = recorded();
    try {
      const limiter = createLimiter({ store: new RedisStore({ client }), prefix: rnd(), limit: 5, windowMs: '1h', instances: 1 });
      const decisions = [];
      for (let i = 0; i < 6; i++) decisions.push(await limiter.consume('alice'));
      expect(decisions.map((d) => [d.allowed, d.limits[0].remaining])).toEqual([
        [true, 4],
        [true, 3],
        [true, 2],
        [true, 1],
        [true, 0],
        [false, 0],
      ]);
      // Before: evalsha, with numKeys, the cost and the limit's figures as numbers.
      // (The first call on a fresh server may meet NOSCRIPT and load the script with evalBuffer.)
      expect(calls.at(-1)!.method).toBe('evalshaBuffer');
      for (const call of calls) expect(call).toEqual({ method: call.method.endsWith('Buffer') ? call.method : 'a Buffer twin', types: call.types.map(() => 'string') });
    } finally {
      client.disconnect();
    }
  });

  it('after SCRIPT FLUSH, loads the script again with evalBuffer once and decides', async () => {
    const { client, calls } = recorded();
    try {
      const limiter = createLimiter({ store: new RedisStore({ client }), prefix: rnd(), limit: 5, windowMs: '1h', instances: 1 });
      await limiter.consume('bob');
      await redis.client.script('FLUSH');
      calls.length = 0;
      const decision = await limiter.consume('bob');
      expect([decision.allowed, decision.reason, decision.limits[0].remaining]).toEqual([true, 'allowed', 3]);
      expect(calls.map((c) => c.method)).toEqual(['evalshaBuffer', 'evalBuffer']);
    } finally {
      client.disconnect();
    }
  });

  it("a subject's script error carries Redis's own text, decoded from the reply's bytes", async () => {
    const { client } = recorded();
    try {
      const prefix = rnd();
      const store = new RedisStore({ client, coalesce: false });
      const limiter = createLimiter({ store, prefix, limit: 5, windowMs: '1h', instances: 1, failMode: 'open', logger: { warn: () => {}, error: () => {} } });
      const errors: unknown[] = [];
      // The limiter asks through the store's sink (Store.evaluateTo): the errors it is told are recorded on the way.
      const evaluateTo = store.evaluateTo.bind(store);
      store.evaluateTo = (request, sink) =>
        evaluateTo(request, { answered: (result) => sink.answered(result), failed: (error) => (errors.push(error), sink.failed(error)) });
      // The counter's state key holds a list: the lean script's HMGET fails with WRONGTYPE for this subject.
      await redis.client.rpush(`${subjectKey(prefix, '', 'carol')}:default.swc`, 'x');
      const decision = await limiter.consume('carol');
      expect(decision.reason).toBe('fail-local');
      expect(errors).toHaveLength(1);
      expect(errors[0]).toMatchObject({ code: 'FG_STORE_SCRIPT' });
      expect((errors[0] as Error).message).toMatch(/WRONGTYPE Operation against a key holding the wrong kind of value/);
    } finally {
      client.disconnect();
    }
  });
});
