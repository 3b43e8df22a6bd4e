// RedisStore on a real 3-master Redis Cluster: NOSCRIPT, MOVED, ASK and TRYAGAIN, and a live slot migration under load.
import { keySlot, pollUntil, startRedisCluster, type RedisClusterHandle } from '@floodgate/testing';
import type { Cluster, Redis } from 'ioredis';
import { createLimiter, RedisStore, subjectKey, type Decision, type Limiter, type LimiterOptions } from '../src';

let cluster: RedisClusterHandle;
let client: Cluster;
const nodeClients: Redis[] = [];
const run = Math.random().toString(36).slice(2, 8);

beforeAll(async () => {
  cluster = await startRedisCluster({ masters: 3 });
  // The options docs/scaling.md recommends: nothing is ever sent twice (retryDelayOnFailover: 0;
  // autoResendUnfulfilledCommands is what RedisStore checks); redirections keep ioredis's defaults.
  client = cluster.client({
    scaleReads: 'master',
    retryDelayOnFailover: 0,
    redisOptions: { autoResendUnfulfilledCommands: false },
  });
}, 60_000);

afterAll(async () => {
  client?.disconnect();
  nodeClients.forEach((c) => c.disconnect());
  await cluster?.stop();
});

function nodeClient(index: number): Redis {
  const c = cluster.nodes[index].client();
  nodeClients.push(c);
  return c;
}

/** INFO errorstats over every master: { MOVED: n, ASK: n, TRYAGAIN: n, NOSCRIPT: n, ... }. */
async function errorStats(): Promise<Record<string, number>> {
  const total: Record<string, number> = {};
  for (const node of cluster.nodes) {
    for (const m of (await node.info('errorstats')).matchAll(/^errorstat_([A-Z]+):count=(\d+)/gm)) {
      total[m[1]] = (total[m[1]] ?? 0) + Number(m[2]);
    }
  }
  return total;
}

function limiterOn(prefix: string, options: LimiterOptions): Limiter {
  // A generous per-call timeout: a redirected call must be answered, not timed out, to be checked.
  const store = new RedisStore({ client, timeoutMs: 10_000 });
  return createLimiter({ ...options, store, prefix, blockCacheSize: 0, failMode: 'closed' });
}

/** `count` subjects whose keys under `prefix` all hash to `slot` (the subject key's hash tag decides). */
function subjectsInSlot(prefix: string, slot: number, count: number, tag: string): string[] {
  const found: string[] = [];
  for (let i = 0; found.length < count; i++) {
    if (keySlot(subjectKey(prefix, '', `${tag}${i}`)) === slot) found.push(`${tag}${i}`);
  }
  return found;
}

function expectStoreDecision(d: Decision, want: Partial<Decision>): void {
  expect({ degraded: d.degraded, ...Object.fromEntries(Object.keys(want).map((k) => [k, d[k as keyof Decision]])) }).toEqual({
    degraded: false,
    ...want,
  });
}

describe('RedisStore on a Redis Cluster', () => {
  it('keeps every key of a multi-limit subject in one slot, and runs the all-or-nothing script there', async () => {
    const limiter = limiterOn(`${run}-multi`, {
      limits: [
        { name: 'burst', algorithm: 'token-bucket', burst: 2, refillPerSecond: 0.001 },
        { name: 'minute', algorithm: 'fixed-window', limit: 3, windowMs: '1d' },
      ],
    });
    const base = subjectKey(`${run}-multi`, '', 'alice');
    const keys = limiter.options.limits.map((l) => `${base}:${l.keySuffix}`);
    expect(new Set(keys.map(keySlot)).size).toBe(1);
    expectStoreDecision(await limiter.consume('alice'), { allowed: true });
    expectStoreDecision(await limiter.consume('alice'), { allowed: true });
    // The bucket is empty: denied, and the fixed window is not charged for it (all-or-nothing).
    expectStoreDecision(await limiter.consume('alice'), { allowed: false, policy: 'burst' });
    const owner = cluster.nodes[await cluster.ownerOf(keySlot(base))];
    const direct = nodeClient(cluster.nodes.indexOf(owner));
    expect(await direct.hget(keys[1], 'c')).toBe('2');
  });

  it('NOSCRIPT: a master that never saw the script answers through EVAL, once, then EVALSHA', async () => {
    const prefix = `${run}-noscript`;
    const limiter = limiterOn(prefix, { limit: 5, windowMs: '1d' });
    // One subject on each master.
    const byOwner = new Map<number, string>();
    for (let i = 0; byOwner.size < cluster.nodes.length; i++) {
      const owner = await cluster.ownerOf(keySlot(subjectKey(prefix, '', `u${i}`)));
      if (!byOwner.has(owner)) byOwner.set(owner, `u${i}`);
    }
    await Promise.all(cluster.nodes.map((_, i) => nodeClient(i).script('FLUSH')));
    await cluster.resetStats();
    for (const subject of byOwner.values()) expectStoreDecision(await limiter.consume(subject), { allowed: true, remaining: 4 });
    for (const subject of byOwner.values()) expectStoreDecision(await limiter.consume(subject), { allowed: true, remaining: 3 });
    const stats = await cluster.commandStats();
    expect({ eval: stats.eval, evalsha: stats.evalsha }).toEqual({ eval: 3, evalsha: 6 });
    expect((await errorStats()).NOSCRIPT).toBe(3);
  });

  it('MOVED: after its slot moved, a subject is decided by the new owner with its count intact', async () => {
    const prefix = `${run}-moved`;
    const limiter = limiterOn(prefix, { algorithm: 'sliding-window-log', limit: 4, windowMs: '1d' });
    for (let k = 3; k >= 1; k--) expectStoreDecision(await limiter.consume('bob'), { allowed: true, remaining: k });
    const slot = keySlot(subjectKey(prefix, '', 'bob'));
    const from = await cluster.ownerOf(slot);
    await cluster.resetStats();
    await cluster.migrateSlot(slot, (from + 1) % cluster.nodes.length);
    expectStoreDecision(await limiter.consume('bob'), { allowed: true, remaining: 0 });
    expectStoreDecision(await limiter.consume('bob'), { allowed: false, remaining: 0 });
    expect((await errorStats()).MOVED).toBeGreaterThanOrEqual(1);
  });

  it('ASK and TRYAGAIN: mid-migration, each subject is decided once, where its keys are', async () => {
    const prefix = `${run}-ask`;
    const single = limiterOn(prefix, { algorithm: 'fixed-window', limit: 5, windowMs: '1d' });
    const multi = limiterOn(`${prefix}-m`, {
      limits: [
        { name: 'a', algorithm: 'fixed-window', limit: 5, windowMs: '1d' },
        { name: 'b', algorithm: 'sliding-window-counter', limit: 10, windowMs: '1d' },
      ],
    });
    const split = 'carol';
    const slot = keySlot(subjectKey(`${prefix}-m`, '', split));
    const [settled, newcomer] = subjectsInSlot(prefix, slot, 2, 'v');
    expectStoreDecision(await single.consume(settled), { allowed: true, remaining: 4 });
    expectStoreDecision(await multi.consume(split), { allowed: true, remaining: 4 });

    const from = await cluster.ownerOf(slot);
    const to = (from + 1) % cluster.nodes.length;
    const source = nodeClient(from);
    const target = nodeClient(to);
    const sourceId = (await source.cluster('MYID')) as string;
    const targetId = (await target.cluster('MYID')) as string;
    await cluster.resetStats();
    // The first half of what migrateSlot does, by hand, to hold the slot mid-migration.
    await target.cluster('SETSLOT', slot, 'IMPORTING', sourceId);
    await source.cluster('SETSLOT', slot, 'MIGRATING', targetId);

    // Keys still on the source: the source decides.
    expectStoreDecision(await single.consume(settled), { allowed: true, remaining: 3 });
    // No keys anywhere yet: the source answers ASK, and the target decides (ASKING).
    expectStoreDecision(await single.consume(newcomer), { allowed: true, remaining: 4 });
    expect((await errorStats()).ASK).toBeGreaterThanOrEqual(1);

    // One of carol's two keys moved: the script cannot run anywhere (TRYAGAIN) until both have.
    const base = subjectKey(`${prefix}-m`, '', split);
    const [fixedKey, counterKey] = multi.options.limits.map((l) => `${base}:${l.keySuffix}`);
    await source.migrate(cluster.nodes[to].host, cluster.nodes[to].port, '', 0, 5_000, 'KEYS', fixedKey);
    let answered = false;
    const pending = multi.consume(split).finally(() => (answered = true));
    // Wait for Redis to have refused it (ioredis retries a TRYAGAIN every 100 ms, 16 times).
    await pollUntil(async () => ((await errorStats()).TRYAGAIN >= 1 ? true : undefined), { timeoutMs: 1_500, intervalMs: 10, what: 'a TRYAGAIN' });
    expect(answered).toBe(false); // still waiting: decided nowhere while its keys are split
    await cluster.migrateSlot(slot, to); // moves the rest and hands the slot over
    expectStoreDecision(await pending, { allowed: true, remaining: 3 });

    // Nothing was counted twice: the next decisions continue exactly where they should.
    expectStoreDecision(await multi.consume(split), { allowed: true, remaining: 2 });
    expect(await target.hget(fixedKey, 'c')).toBe('3');
    expect(await target.hget(counterKey, 'c')).toBe('3');
    expectStoreDecision(await single.consume(settled), { allowed: true, remaining: 2 });
    expectStoreDecision(await single.consume(newcomer), { allowed: true, remaining: 3 });
  });

  it('live migration under load: every subject in the moving slot admits exactly its limit', async () => {
    const prefix = `${run}-load`;
    const LIMIT = 150;
    const configs: [string, LimiterOptions][] = [
      ['fixed-window', { algorithm: 'fixed-window', limit: LIMIT, windowMs: '1d' }],
      ['sliding-window-counter', { algorithm: 'sliding-window-counter', limit: LIMIT, windowMs: '1d' }],
      ['sliding-window-log', { algorithm: 'sliding-window-log', limit: LIMIT, windowMs: '1d' }],
      // Refill so slow that none comes back during the test: the bucket admits exactly its burst.
      ['token-bucket', { algorithm: 'token-bucket', burst: LIMIT, refillPerSecond: 0.0001 }],
      ['gcra', { algorithm: 'gcra', burst: LIMIT, refillPerSecond: 0.0001 }],
      [
        'multi-limit',
        {
          limits: [
            { name: 'day', algorithm: 'fixed-window', limit: LIMIT, windowMs: '1d' },
            { name: 'big', algorithm: 'sliding-window-counter', limit: LIMIT * 10, windowMs: '1d' },
          ],
        },
      ],
    ];
    // Every subject of every config in one slot, so one migration moves all of them mid-load.
    const slot = keySlot(subjectKey(`${prefix}-0`, '', 'seed'));
    const subjects = configs.map(([name, options], i) => ({
      name,
      limiter: limiterOn(`${prefix}-${i}`, options),
      subjects: subjectsInSlot(`${prefix}-${i}`, slot, 2, 's'),
    }));
    const from = await cluster.ownerOf(slot);
    const to = (from + 1) % cluster.nodes.length;
    await cluster.resetStats();

    const admitted = new Map<string, number>();
    const degraded: string[] = [];
    let sent = 0;
    let migrating: Promise<void> | undefined;
    let migratedAtSent = -1;
    const total = subjects.length * 2 * LIMIT * 2; // twice each subject's limit
    const loops = subjects.flatMap(({ name, limiter, subjects: ss }) =>
      ss.flatMap((subject) =>
        Array.from({ length: 3 }, async () => {
          const id = `${name}/${subject}`;
          // Each loop sends its share, and keeps going until the migration is over (however slow the machine).
          for (let n = 0; n < Math.ceil((2 * LIMIT) / 3) || migratedAtSent < 0; n++) {
            const d = await limiter.consume(subject);
            sent++;
            if (d.degraded) degraded.push(`${id}: ${d.reason}`);
            if (d.allowed) admitted.set(id, (admitted.get(id) ?? 0) + 1);
            // Start the migration once a fifth of the requests are in, while the rest keep coming.
            if (!migrating && sent >= total / 5) {
              migrating = cluster.migrateSlot(slot, to).finally(() => {
                migratedAtSent = sent;
              });
            }
          }
        }),
      ),
    );
    await Promise.all(loops);
    await migrating;

    expect(degraded).toEqual([]);
    expect(await cluster.ownerOf(slot)).toBe(to);
    // The migration overlapped the load: it began a fifth of the way in, and requests followed it.
    expect(migratedAtSent).toBeGreaterThan(total / 5);
    expect(sent).toBeGreaterThan(migratedAtSent);
    const want = Object.fromEntries(subjects.flatMap(({ name, subjects: ss }) => ss.map((s) => [`${name}/${s}`, LIMIT])));
    expect(Object.fromEntries(admitted)).toEqual(want);
    const errors = await errorStats();
    if (process.env.FLOODGATE_PRINT_MEASUREMENTS) {
      console.log(`migration under load: sent=${sent} migrated-at=${migratedAtSent} errorstats=${JSON.stringify(errors)}`);
    }
    expect((errors.MOVED ?? 0) + (errors.ASK ?? 0)).toBeGreaterThanOrEqual(1);
  }, 60_000);
});
