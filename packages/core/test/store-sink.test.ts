// A guarded decision on RedisStore is told through Store.evaluateTo (a sink, no promise of the store's): the bookkeeping still runs, a failure told at once still takes the failure mode.
import { Redis } from 'ioredis';
import { createLimiter, RedisStore } from '../src';
import { serverWithClient } from './support/redis-clients';

const redis = serverWithClient();
const rnd = () => `sk-${Math.random().toString(36).slice(2, 10)}`;
const quiet = { warn: () => {}, error: () => {} };

function connect(): Redis {
  return new Redis({ host: redis.server.host, port: redis.server.port, autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 1, retryStrategy: () => null });
}

/** The store with its evaluate and evaluateTo counted. */
function counted(store: RedisStore): { evaluate: number; evaluateTo: number } {
  const seen = { evaluate: 0, evaluateTo: 0 };
  const evaluate = store.evaluate.bind(store);
  const evaluateTo = store.evaluateTo.bind(store);
  store.evaluate = (request) => (seen.evaluate++, evaluate(request));
  store.evaluateTo = (request, sink) => (seen.evaluateTo++, evaluateTo(request, sink));
  return seen;
}

describe('decisions told through the store\'s sink', () => {
  it('each consume asks evaluateTo, not evaluate, and gets Redis\'s decision, counted in health', async () => {
    const client = connect();
    try {
      const store = new RedisStore({ client });
      const seen = counted(store);
      const limiter = createLimiter({ store, prefix: rnd(), limit: 2, windowMs: '1h', instances: 1, logger: quiet });
      const decisions = [];
      for (let i = 0; i < 3; i++) decisions.push(await limiter.consume('alice'));
      expect(decisions.map((d) => [d.allowed, d.reason])).toEqual([
        [true, 'allowed'],
        [true, 'allowed'],
        [false, 'limited'],
      ]);
      // Before: 3 evaluate, 0 evaluateTo.
      expect(seen).toEqual({ evaluate: 0, evaluateTo: 3 });
      expect(limiter.health().stores[0]).toMatchObject({ breaker: 'closed', consecutiveFailures: 0 });
    } finally {
      client.disconnect();
    }
  });

  it('a store that fails before sending (connection ended) is told at once: the failure mode answers with the whole local share', async () => {
    const client = connect();
    await client.ping();
    const store = new RedisStore({ client });
    const seen = counted(store);
    const limiter = createLimiter({ store, prefix: rnd(), limit: 5, windowMs: '1h', instances: 1, failMode: 'local', logger: quiet });
    const ended = new Promise((resolve) => client.once('end', resolve));
    client.disconnect();
    await ended;
    // Refused before anything is sent (RedisStore: 'Redis connection is end'), so the sink is told inside evaluateTo.
    expect(client.status).toBe('end');
    const reasons = [];
    for (let i = 0; i < 7; i++) {
      const d = await limiter.consume('bob');
      reasons.push(`${d.allowed ? 'allowed' : 'denied'} ${d.reason}`);
    }
    expect(seen.evaluateTo).toBeGreaterThan(0);
    // The local share is the whole limit (one instance): 5 admitted, then denied.
    expect(reasons).toEqual([...Array(5).fill('allowed fail-local'), ...Array(2).fill('denied fail-local')]);
    expect(limiter.health().stores[0].consecutiveFailures).toBeGreaterThan(0);
  });
});
