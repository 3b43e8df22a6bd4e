// The race test's child processes against a real 3-master Redis Cluster: each round's subject on another master, all requests in flight at once, each algorithm admits exactly its limit, uncoalesced and coalesced, on ioredis, node-redis, iovalkey and Valkey GLIDE cluster clients.
import type { ChildProcess } from 'node:child_process';
import { keySlot, startRedisCluster, type RedisClusterHandle } from '@floodgate/testing';
import type { Cluster } from 'ioredis';
import { createLimiter, RedisStore, subjectKey, type AlgorithmName } from '../src';
import { SCRIPTS } from '../src/stores/redis/protocol';
import { modePrefix, RACE_CLIENTS, type RaceClient, type RaceCoalesce, type RaceReply, type RaceSetup } from './race/race-child';
import { allInFlightTogether, inFlightTogetherMs, raceRound, startChildren, stopChildren, TURN_BATCH } from './race/race-harness';

const PROCESSES = 3;
const IN_FLIGHT = 150; // per process, all at once
const LIMIT = 100;
const ROUNDS: readonly AlgorithmName[] = ['fixed-window', 'sliding-window-log', 'sliding-window-counter', 'token-bucket', 'gcra'];

type Done = Extract<RaceReply, { type: 'done' }>;

let cluster: RedisClusterHandle;
let client: Cluster;
const run = Math.random().toString(36).slice(2, 8);
/** Each client's children write under their own prefix on the one cluster. */
const TAGS: Record<RaceClient, string> = { ioredis: 'io', 'node-redis': 'nr', iovalkey: 'iv', glide: 'gl' };
const prefixFor = (kind: RaceClient) => `crace-${run}-${TAGS[kind]}`;
/** The race's own clients, and the Valkey ones (iovalkey Cluster, GLIDE GlideClusterClient). */
const CLIENTS: readonly RaceClient[] = [...RACE_CLIENTS, 'iovalkey', 'glide'];


beforeAll(async () => {
  cluster = await startRedisCluster({ masters: 3 });
  client = cluster.client({ retryDelayOnFailover: 0, redisOptions: { autoResendUnfulfilledCommands: false } });
  // Every script on every master before the race (a child's warm-up loads it on one master only), so
  // that a round's script calls are all EVALSHA, none a NOSCRIPT followed by EVAL.
  for (const node of cluster.nodes) {
    const direct = node.client();
    for (const { source } of Object.values(SCRIPTS)) await direct.script('LOAD', source);
    direct.disconnect();
  }
}, 60_000);

afterAll(async () => {
  client?.disconnect();
  await cluster?.stop();
});

/** Round i's subject lives on master i % 3, so the five rounds cover all three masters. */
async function subjectsOnEveryMaster(own: string): Promise<{ subjects: string[]; owners: number[] }> {
  const subjects: string[] = [];
  const owners: number[] = [];
  for (let n = 0; subjects.length < ROUNDS.length; n++) {
    const owner = await cluster.ownerOf(keySlot(subjectKey(own, '', `subject-${n}`)));
    if (owner === subjects.length % cluster.nodes.length) {
      subjects.push(`subject-${n}`);
      owners.push(owner);
    }
  }
  return { subjects, owners };
}

async function raceOnEveryMaster(children: ChildProcess[], kind: RaceClient, coalesce: RaceCoalesce, scriptCallsPerRound: number): Promise<void> {
  const own = modePrefix(prefixFor(kind), coalesce);
  const { subjects, owners } = await subjectsOnEveryMaster(own);
  expect(new Set(owners).size).toBe(cluster.nodes.length);
  const store = new RedisStore({ client, timeoutMs: 5_000 });
  const results: Record<string, unknown> = {};

  if (coalesce === false) {
    // The control in the same run: GET, compare, INCR from the same processes over-admits.
    const naiveKey = `${own}:naive`;
    await client.set(naiveKey, '0', 'PX', 3_600_000);
    const owner = await cluster.ownerOf(keySlot(naiveKey));
    const done = await raceRound(children, { type: 'go', round: 'naive', coalesce, subject: 'unused', naiveKey }, cluster.nodes[owner]);
    const admitted = done.reduce((total, d) => total + d.admitted, 0);
    results.naive = { admitted, perProcess: done.map((d) => d.admitted), inFlightTogetherMs: Number(inFlightTogetherMs(done).toFixed(2)) };
    expect(done.reduce((total, d) => total + d.failed, 0)).toBe(0);
    expect(allInFlightTogether(done)).toBe(true);
    expect(admitted).toBeGreaterThan(LIMIT);
    expect(Number(await client.get(naiveKey))).toBe(admitted);
  }

  for (const [i, round] of ROUNDS.entries()) {
    await cluster.resetStats();
    // The start barrier: the round's master is stopped until every process has sent all its requests.
    const done: Done[] = await raceRound(children, { type: 'go', round, coalesce, subject: subjects[i], naiveKey: `${own}:unused` }, cluster.nodes[owners[i]]);
    const stats = await cluster.commandStats();
    const sum = (pick: (d: Done) => number) => done.reduce((total, d) => total + pick(d), 0);
    const together = inFlightTogetherMs(done);
    const summary = { round, master: owners[i], admitted: sum((d) => d.admitted), denied: sum((d) => d.denied), failed: sum((d) => d.failed), evalsha: stats.evalsha ?? 0, eval: stats.eval ?? 0 };
    results[round] = { ...summary, perProcess: done.map((d) => d.admitted), inFlightTogetherMs: Number(together.toFixed(2)) };
    expect(summary).toEqual({ round, master: owners[i], admitted: LIMIT, denied: PROCESSES * IN_FLIGHT - LIMIT, failed: 0, evalsha: scriptCallsPerRound, eval: 0 });
    // No process had an answer before every process had sent all of its requests: a real race, not a queue.
    expect({ round, together: allInFlightTogether(done) }).toEqual({ round, together: true });
    // The cluster agrees: the subject is exactly full.
    const tokens = round === 'token-bucket' || round === 'gcra';
    const check = createLimiter({
      store,
      prefix: own,
      algorithm: round,
      ...(tokens ? { burst: LIMIT, refillPerSecond: 1 / 3600 } : { limit: LIMIT, windowMs: '1h' }),
      blockCacheSize: 0,
      failMode: 'closed',
    });
    const peek = await check.peek(subjects[i]);
    expect({ round, allowed: peek.allowed, remaining: peek.remaining, degraded: peek.degraded }).toEqual({ round, allowed: false, remaining: 0, degraded: false });
  }
  if (process.env.FLOODGATE_PRINT_MEASUREMENTS) console.log(`cluster race (${kind}, coalesce ${coalesce}): ${JSON.stringify(results)}`);
}

describe.each(CLIENTS)('on %s cluster clients', (kind) => {
  const children: ChildProcess[] = [];
  beforeAll(async () => {
    // The race test's own child (race/race-child.ts), told to connect to the cluster with this client.
    const setup: RaceSetup = { type: 'setup', port: 0, cluster: cluster.startupNodes, client: kind, prefix: prefixFor(kind), limit: LIMIT, inFlight: IN_FLIGHT };
    children.push(...(await startChildren(PROCESSES, setup)));
  }, 60_000);
  afterAll(() => stopChildren(children));

  it(`no coalescing: ${PROCESSES} processes x ${IN_FLIGHT} in flight at once on one subject per round, one script call each, rounds on every master: each algorithm admits exactly ${LIMIT}; GET-then-INCR does not`, async () => {
    await raceOnEveryMaster(children, kind, false, PROCESSES * IN_FLIGHT);
  }, 90_000);

  it(`default coalescing ('turn'): the same race on every master, ${Math.ceil(IN_FLIGHT / TURN_BATCH)} script calls per process: each algorithm admits exactly ${LIMIT}`, async () => {
    await raceOnEveryMaster(children, kind, 'turn', PROCESSES * Math.ceil(IN_FLIGHT / TURN_BATCH));
  }, 90_000);
});
