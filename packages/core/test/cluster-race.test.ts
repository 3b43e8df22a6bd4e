// The race test's child processes against a real 3-master Redis Cluster: each round's subject on another master, each algorithm admits exactly its limit.
import type { ChildProcess } from 'node:child_process';
import { keySlot, startRedisCluster, type RedisClusterHandle } from '@floodgate/testing';
import type { Cluster } from 'ioredis';
import { createLimiter, RedisStore, subjectKey, type AlgorithmName } from '../src';
import type { RaceGo, RaceReply, RaceSetup } from './race/race-child';
import { next, startChildren, stopChildren } from './race/race-harness';

const PROCESSES = 3;
const IN_FLIGHT = 150; // per process, all at once
const LIMIT = 100;
const ROUNDS: readonly AlgorithmName[] = ['fixed-window', 'sliding-window-log', 'sliding-window-counter', 'token-bucket', 'gcra'];

type Done = Extract<RaceReply, { type: 'done' }>;

let cluster: RedisClusterHandle;
let client: Cluster;
const children: ChildProcess[] = [];
const prefix = `crace-${Math.random().toString(36).slice(2, 8)}`;


beforeAll(async () => {
  cluster = await startRedisCluster({ masters: 3 });
  client = cluster.client({ retryDelayOnFailover: 0, redisOptions: { autoResendUnfulfilledCommands: false } });
  // The race test's own child (race/race-child.ts), told to connect to the cluster.
  const setup: RaceSetup = { type: 'setup', port: 0, cluster: cluster.startupNodes, prefix, limit: LIMIT, inFlight: IN_FLIGHT };
  children.push(...(await startChildren(PROCESSES, setup)));
}, 60_000);

afterAll(async () => {
  await stopChildren(children);
  client?.disconnect();
  await cluster?.stop();
});

it(`${PROCESSES} processes x ${IN_FLIGHT} in flight on one subject per round, rounds on every master: each algorithm admits exactly ${LIMIT}`, async () => {
  // Round i's subject lives on master i % 3, so the five rounds cover all three masters.
  const subjects: string[] = [];
  const owners: number[] = [];
  for (let n = 0; subjects.length < ROUNDS.length; n++) {
    const owner = await cluster.ownerOf(keySlot(subjectKey(prefix, '', `subject-${n}`)));
    if (owner === subjects.length % cluster.nodes.length) {
      subjects.push(`subject-${n}`);
      owners.push(owner);
    }
  }
  expect(new Set(owners).size).toBe(cluster.nodes.length);
  const store = new RedisStore({ client, timeoutMs: 5_000 });
  const results: Record<string, unknown> = {};

  for (const [i, round] of ROUNDS.entries()) {
    const go: RaceGo = { type: 'go', round, subject: subjects[i], naiveKey: `${prefix}:unused` };
    const done: Done[] = await Promise.all(
      children.map((child) => {
        const reply = next(child, 'done', 40_000);
        child.send(go);
        return reply;
      }),
    );
    const sum = (pick: (d: Done) => number) => done.reduce((total, d) => total + pick(d), 0);
    const summary = { round, master: owners[i], admitted: sum((d) => d.admitted), denied: sum((d) => d.denied), failed: sum((d) => d.failed) };
    results[round] = summary;
    expect(summary).toEqual({ round, master: owners[i], admitted: LIMIT, denied: PROCESSES * IN_FLIGHT - LIMIT, failed: 0 });
    // Many requests were in flight at once in every process: a real race, not a queue.
    expect(done.map((d) => d.inFlightAtFirstReply >= 100)).toEqual(done.map(() => true));
    // The cluster agrees: the subject is exactly full.
    const tokens = round === 'token-bucket' || round === 'gcra';
    const check = createLimiter({
      store,
      prefix,
      algorithm: round,
      ...(tokens ? { burst: LIMIT, refillPerSecond: 1 / 3600 } : { limit: LIMIT, windowMs: '1h' }),
      blockCacheSize: 0,
      failMode: 'closed',
    });
    const peek = await check.peek(subjects[i]);
    expect({ round, allowed: peek.allowed, remaining: peek.remaining, degraded: peek.degraded }).toEqual({ round, allowed: false, remaining: 0, degraded: false });
  }
  if (process.env.FLOODGATE_PRINT_MEASUREMENTS) console.log(`cluster race: ${JSON.stringify(results)}`);
}, 60_000);
