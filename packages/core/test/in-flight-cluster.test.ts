// maxInFlight per Cluster node, on a real 3-master Redis Cluster through each cluster client: a paused master fills its own bound and never holds up the calls to the others.
import { keySlot, whilePaused } from '@floodgate/testing';
import { createLimiter, RedisStore, subjectKey } from '../src';
import { CLUSTER_KINDS, clusterWithClients, kindTag } from './support/redis-clients';

const quiet = { warn: () => undefined, error: () => undefined };
const MAX = 2;
const DEADLINE = 400;

const setup = clusterWithClients();

/** A subject whose keys live on master `node` (its slot is its hash tag's). */
async function subjectOn(prefix: string, node: number): Promise<string> {
  for (let i = 0; ; i++) {
    const subject = `s${i}`;
    if ((await setup.cluster.ownerOf(keySlot(subjectKey(prefix, '', subject)))) === node) return subject;
  }
}

describe.each(CLUSTER_KINDS)('on %s', (kind) => {
  it(`a paused master takes its own ${MAX} places: calls to the other masters still go to Redis, and a third call to the paused one is decided locally`, async () => {
    const prefix = `ifc-${kindTag(kind)}-${Math.random().toString(36).slice(2, 8)}`;
    const store = new RedisStore({ client: setup.client(kind), timeoutMs: DEADLINE, coalesce: false, maxInFlight: MAX });
    const limiter = createLimiter({ store, prefix, limit: 100, windowMs: '1m', instances: 1, breaker: { failureThreshold: 1_000 }, logger: quiet });
    const slow = await subjectOn(prefix, 0);
    const fast = await subjectOn(prefix, 1);
    // Both nodes answer first (the script is loaded on each, the client knows the slot map).
    expect((await limiter.consume(slow)).reason).toBe('allowed');
    expect((await limiter.consume(fast)).reason).toBe('allowed');
    const answers = await whilePaused(setup.cluster.nodes[0], async () => {
      // Two calls hang on the paused master: its lane is full.
      const hung = [limiter.consume(slow), limiter.consume(slow)];
      // A third call to the paused master waits for a place within its deadline, is never sent, and is decided locally.
      const third = limiter.consume(slow);
      // A call to another master does not wait behind them: Redis decides it (and, answering, shows the store busy, not down).
      const other = await limiter.consume(fast);
      return { other, third: await third, hung: await Promise.all(hung) };
    });
    expect(answers.other).toMatchObject({ reason: 'allowed', degraded: false, remaining: 98 });
    expect(answers.third).toMatchObject({ reason: 'fail-local', degraded: true });
    // The two hung calls passed their deadline while the other master answered: slow, not down.
    expect(answers.hung.map((d) => d.reason)).toEqual(['fail-local', 'fail-local']);
    const health = limiter.health().stores[0];
    // The third: shed (the store answered meanwhile), not counted against the breaker.
    expect(health.shed).toBe(1);
    expect(health.breaker).toBe('closed');
    // Never sent: the paused master ran the two hung calls when it resumed, and only those.
    const after = await limiter.peek(slow);
    // (A peek reports what would remain after one more.)
    expect(after.remaining).toBe(100 - 1 - 2 - 1);
  });
});
