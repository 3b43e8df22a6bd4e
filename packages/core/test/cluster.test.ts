// The shared conformance table against RedisStore on a real 3-master Redis Cluster through each cluster client (ioredis 5 and 6, node-redis), its subjects spread over every master.
import { keySlot, type RespReply } from '@floodgate/testing';
import type { Cluster, Redis } from 'ioredis';
import { createLimiter, RedisStore, subjectKey, type Store, type StoreRequest, type StoreResult } from '../src';
import { describeConformance } from './conformance/scenarios';
import { CLUSTER_KINDS, clusterWithClients, kindTag } from './support/redis-clients';
import { countWrites } from './support/socket-writes';

const setup = clusterWithClients();
const prefix = `cconf-${Math.random().toString(36).slice(2, 10)}`;


/**
 * The scenarios use the same few subjects ('s'), and a subject's slot depends only on its digest
 * (not on the prefix), so on their own they would all land on one master. This wrapper salts the
 * hash tag per store (one store per scenario): `{digest}` becomes `{n.digest}`, which moves every
 * key of a subject to another slot together, and leaves the keys otherwise as RedisStore gets them.
 */
class SlotSpreadingStore implements Store {
  readonly name = 'redis';
  // RedisStore bounds its own calls; saying so keeps the limiter from adding a deadline of its own.
  readonly timeoutMs: number;
  constructor(
    private readonly inner: RedisStore,
    private readonly salt: string,
  ) {
    this.timeoutMs = inner.timeoutMs;
  }
  private salted(keys: readonly string[]): string[] {
    return keys.map((key) => key.replace('{', `{${this.salt}.`));
  }
  evaluate(request: StoreRequest): Promise<StoreResult> {
    const lockout = request.lockout && { ...request.lockout, key: this.salted([request.lockout.key])[0] };
    // A settle's marker key shares the subject's tag too (it is declared in the same script call).
    const settle = request.settle && { ...request.settle, key: this.salted([request.settle.key])[0] };
    // So does a subject's override key (read in the same script call).
    const override = request.override && { ...request.override, key: this.salted([request.override.key])[0] };
    return this.inner.evaluate({ ...request, keys: this.salted(request.keys), ...(lockout && { lockout }), ...(settle && { settle }), ...(override && { override }) });
  }
  // Overrides are written under the subject's (salted) tag, and listed through an index the wrapper leaves as it is.
  putOverride(key: string, value: string, ttlMs: number, index: Parameters<NonNullable<Store['putOverride']>>[3]): Promise<void> {
    return this.inner.putOverride(this.salted([key])[0], value, ttlMs, index);
  }
  dropOverride(key: string, index: Parameters<NonNullable<Store['dropOverride']>>[1]): Promise<void> {
    return this.inner.dropOverride(this.salted([key])[0], index);
  }
  listOverrides(indexKey: string): Promise<string[]> {
    return this.inner.listOverrides(indexKey);
  }
  reset(keys: readonly string[]): Promise<void> {
    return this.inner.reset(this.salted(keys));
  }
}

let stores = 0;
describe.each(CLUSTER_KINDS)('on %s', (kind) => {
  describeConformance(
    'conformance: RedisStore on Redis Cluster',
    (clock) => new SlotSpreadingStore(new RedisStore({ client: setup.client(kind), timeoutMs: 5_000, UNSAFE_testClock: clock }), String(stores++)),
    { prefix: `${prefix}-${kindTag(kind)}` },
  );
});

describe('after the conformance suite on the cluster', () => {
  it('spread its subjects over every master, each key in its subject\'s slot and with a TTL', async () => {
    const perNode: string[][] = [];
    for (const node of setup.cluster.nodes) {
      const direct: Redis = node.client();
      try {
        const keys: string[] = [];
        let cursor = '0';
        do {
          const [next, batch] = await direct.scan(cursor, 'MATCH', `${prefix}-*`, 'COUNT', 1000);
          cursor = next;
          keys.push(...batch);
        } while (cursor !== '0');
        const ttls = await Promise.all(keys.map((key) => direct.pttl(key)));
        expect(keys.filter((_, i) => ttls[i] === -1)).toEqual([]);
        perNode.push(keys);
      } finally {
        direct.disconnect();
      }
    }
    expect(perNode.map((keys) => keys.length > 0)).toEqual(setup.cluster.nodes.map(() => true));
    // Every key lives on the master that owns its slot (no stray copies left by redirections). The
    // owners from one CLUSTER SLOTS (nothing migrates in this file): asked per key, as ownerOf does,
    // it took a connection per key, thousands of them.
    const ranges = ((await setup.cluster.nodes[0].command(['CLUSTER', 'SLOTS'])) as RespReply[][]).map(([from, to, master]) => ({
      from: Number(from),
      to: Number(to),
      owner: setup.cluster.nodes.findIndex((node) => node.port === Number((master as RespReply[])[1])),
    }));
    const ownerOf = (slot: number) => ranges.find((r) => slot >= r.from && slot <= r.to)?.owner;
    for (const [index, keys] of perNode.entries()) {
      for (const key of keys) expect({ key, owner: ownerOf(keySlot(key)) }).toEqual({ key, owner: index });
    }
  });
});

describe.each(CLUSTER_KINDS)('one turn of many subjects on %s', (kind) => {
  it('sends each call to the master that owns its slot, in one write per master (ioredis; node-redis writes per tick itself)', async () => {
    const client = setup.client(kind);
    const limiter = createLimiter({
      store: new RedisStore({ client, timeoutMs: 5_000 }),
      prefix: `${prefix}-t${kindTag(kind)}`,
      algorithm: 'fixed-window',
      limit: 5,
      windowMs: '1h',
      blockCacheSize: 0,
      // A fixed count: the fleet's announcement (instances 'auto') is a write of its own to one master.
      instances: 1,
    });
    // A subject's slot depends only on its digest: these 24 land on every master.
    const subjects = Array.from({ length: 24 }, (_, i) => `turn-${i}`);
    // The first turn loads the script on every master (NOSCRIPT, then EVAL): not counted.
    expect((await Promise.all(subjects.map((s) => limiter.consume(s)))).every((d) => d.allowed && d.remaining === 4)).toBe(true);
    const counters = kind.startsWith('ioredis') ? (client as unknown as Cluster).nodes('master').map((node) => countWrites(node)) : [];
    try {
      const decisions = await Promise.all(subjects.map((s) => limiter.consume(s)));
      expect(decisions.every((d) => d.allowed && d.remaining === 3)).toBe(true);
    } finally {
      for (const counter of counters) counter.restore();
    }
    if (counters.length > 0) {
      expect(counters.map((c) => c.count <= 1)).toEqual(counters.map(() => true));
      expect(counters.filter((c) => c.count === 1).length).toBeGreaterThanOrEqual(2);
    }
  });
});

/**
 * For each of `slots`, `count` subjects (identities) whose keys, under `prefix` and the default
 * scope, live in that slot: found by trying names, in one pass for all the slots. A subject's slot
 * depends only on its digest, not on the prefix, so the names found for one client kind serve the
 * next (checked under its prefix, searched again if not): each search tries about 16,384 names per
 * subject, and three searches per kind were most of this test's time.
 */
const found = new Map<string, string[][]>();
function subjectsInSlots(prefix: string, slots: readonly number[], count: number): string[][] {
  const memo = `${slots.join(',')}/${count}`;
  const known = found.get(memo);
  if (known?.every((names, i) => names.every((name) => keySlot(subjectKey(prefix, '', name)) === slots[i]))) return known;
  const groups = slots.map((): string[] => []);
  for (let i = 0; groups.some((g) => g.length < count); i++) {
    if (i > 5_000_000) throw new Error(`no ${count} subjects found in each of slots ${slots.join(', ')}`);
    const at = slots.indexOf(keySlot(subjectKey(prefix, '', `s${i}`)));
    if (at >= 0 && groups[at].length < count) groups[at].push(`s${i}`);
  }
  found.set(memo, groups);
  return groups;
}

describe.each(CLUSTER_KINDS)('several subjects in one script call on %s', (kind) => {
  it('shares a call only among subjects of one slot: 3 slots (two on one master) -> 3 calls, each subject exact, no CROSSSLOT', async () => {
    const client = setup.client(kind);
    const p = `${prefix}-g${kindTag(kind)}`;
    // Two slots on one master and one on another: subjects group by slot, not by node (Redis refuses
    // a script whose keys span slots, even on one node).
    const ownerOf = async (slot: number) => setup.cluster.ownerOf(slot);
    let [a, b, c] = [100, 101, 0];
    while ((await ownerOf(b)) !== (await ownerOf(a))) b++;
    for (c = 1; (await ownerOf(c)) === (await ownerOf(a)); c += 997);
    // Per slot, 4 subjects for the turn and a fifth to load the script with.
    const inSlots = subjectsInSlots(p, [a, b, c], 5);
    const groups = inSlots.map((names) => names.slice(0, 4));
    const subjects = groups.flat();
    const limiter = createLimiter({ store: new RedisStore({ client, timeoutMs: 5_000 }), prefix: p, algorithm: 'sliding-window-counter', limit: 2, windowMs: '1h', blockCacheSize: 0 });
    // Loads the script on the masters (NOSCRIPT, then EVAL) on subjects of their own: not counted.
    await Promise.all(inSlots.map((names) => limiter.consume(names[4])));
    await setup.cluster.resetStats();
    // Each subject three times in one turn against a limit of 2: admitted, admitted, denied.
    const decisions = await Promise.all([...subjects, ...subjects, ...subjects].map((s) => limiter.consume(s)));
    const stats = await setup.cluster.commandStats();
    expect({ evalsha: stats.evalsha ?? 0, eval: stats.eval ?? 0 }).toEqual({ evalsha: 3, eval: 0 });
    subjects.forEach((s, i) => {
      const mine = [decisions[i], decisions[i + subjects.length], decisions[i + 2 * subjects.length]].map((d) => `${d.reason} ${d.remaining}`);
      expect({ s, mine }).toEqual({ s, mine: ['allowed 1', 'allowed 0', 'limited 0'] });
    });
  });
});

describe.each(CLUSTER_KINDS)('the fleet announcement on %s', (kind) => {
  it("counts this instance in the ZSET on the master that owns its slot, with a TTL; limiters on one client share it", async () => {
    const own = `cfleet-${kindTag(kind)}-${Math.random().toString(36).slice(2, 8)}`;
    const client = setup.client(kind);
    const limiters = [0, 1].map(() => createLimiter({ store: new RedisStore({ client, timeoutMs: 5_000, announceMs: 200 }), prefix: own, limit: 10, windowMs: '1m', logger: { warn() {}, error() {} } }));
    const key = `${own}.instances`;
    const owner = setup.cluster.nodes[await setup.cluster.ownerOf(keySlot(key))].client();
    try {
      const until = Date.now() + 10_000;
      while (limiters.some((l) => !l.health().fleets?.[0]?.learnedAt) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      // failures: an announcement may pass its bound (min(announceMs, 5 s)) on a loaded machine; learning the count is what is checked.
      expect(limiters.map((l) => l.health().fleets)).toEqual(limiters.map(() => [{ prefix: own, instances: 1, source: 'learned', learned: true, learnedAt: expect.any(String), failures: expect.any(Number) }]));
      expect(await owner.zcard(key)).toBe(1);
      expect(await owner.pttl(key)).toBeGreaterThan(0);
      expect((await limiters[0].consume('s')).reason).toBe('allowed');
    } finally {
      owner.disconnect();
    }
  });
});
