// The default `instances: 'auto'` on real Redis: limiter processes learn how many they are, a flooding caller gets at most its share per instance while Redis is killed or stopped, a SIGKILLed instance ages out and the share grows back.
import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { startRedis, sleep, waitFor, whilePaused, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import { createLimiter, MemoryStore, RedisStore } from '../src';
import type { FleetWorkerReply, FleetWorkerRequest, FleetWorkerSetup } from './fleet-worker';

const ROOT = join(__dirname, '..', '..', '..');
const LIMIT = 30;
// Short, so that an instance that dies ages out in seconds (3 periods); the default is 5 s.
const ANNOUNCE_MS = 300;
const quiet = { warn() {}, error() {} };
const rnd = () => `fl${Math.random().toString(36).slice(2, 10)}`;

let server: RedisServer;
let client: Redis;
const children: ChildProcess[] = [];

beforeAll(async () => {
  server = await startRedis();
  client = server.client({ autoResendUnfulfilledCommands: false });
  await client.ping();
}, 30_000);

// A test's workers end with it, failed or not: left running, they would announce into the next test's counts.
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
});

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  client?.disconnect();
  await server?.stop();
});

function startWorker(setup: FleetWorkerSetup): Promise<ChildProcess> {
  // The TypeScript sources compiled by SWC on require, with the race test's register hook.
  const child = fork(join(__dirname, 'fleet-worker.ts'), [JSON.stringify(setup)], {
    cwd: ROOT,
    execArgv: ['-r', join(__dirname, 'race', 'swc-register.js')],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    child.once('message', () => resolve(child));
    child.once('exit', (code) => reject(new Error(`fleet worker exited with ${code} before it was ready`)));
  });
}

function ask(child: ChildProcess, request: FleetWorkerRequest): Promise<FleetWorkerReply> {
  return new Promise((resolve, reject) => {
    child.once('message', (reply: FleetWorkerReply) => (reply.error ? reject(new Error(reply.error)) : resolve(reply)));
    child.send(request);
  });
}

const instancesOf = async (workers: readonly ChildProcess[]) => Promise.all(workers.map(async (w) => (await ask(w, { type: 'instances' })).instances));

it('3 limiter processes learn 3; with Redis SIGKILLed, then SIGSTOPped, a flooding caller gets at most floor(limit / live instances) per instance; a SIGKILLed instance ages out and the share grows back', async () => {
  const prefix = rnd();
  const workers = await Promise.all([0, 1, 2].map(() => startWorker({ port: server.port, prefix, limit: LIMIT, announceMs: ANNOUNCE_MS })));
  await waitFor('every instance to count 3', async () => (await instancesOf(workers)).every((n) => n === 3), 15_000);
  // The fleet's ZSET: one member per process, under the prefix, with a TTL.
  const key = `${prefix}.instances`;
  expect(await client.zcard(key)).toBe(3);
  expect(await client.pttl(key)).toBeGreaterThan(0);

  await server.kill();
  try {
    const floods = await Promise.all(workers.map((w) => ask(w, { type: 'flood', subject: 'flooder', requests: 200 })));
    // Each instance admits exactly its share, from memory: 3 x 10, not 3 x 200 (fail-open) nor 3 x 30.
    expect(floods.map((f) => f.flood!.admitted)).toEqual([10, 10, 10]);
    for (const f of floods) expect(Object.keys(f.flood!.byReason).sort()).toEqual(['fail-local']);
    // The count is remembered while the store is away.
    await sleep(4 * ANNOUNCE_MS);
    expect(await instancesOf(workers)).toEqual([3, 3, 3]);
  } finally {
    await server.restart();
  }
  // The restarted Redis kept no data: each instance announces itself again.
  await waitFor('every instance to count 3 again', async () => (await client.zcard(key)) === 3, 15_000);
  // And none believed the smaller counts its first answers after the restart found (1 or 2).
  expect(await instancesOf(workers)).toEqual([3, 3, 3]);

  // One instance SIGKILLed: its announcement is never withdrawn, it ages out (3 periods).
  const killedAt = Date.now();
  workers[2].kill('SIGKILL');
  const alive = workers.slice(0, 2);
  await waitFor('the killed instance to age out', async () => (await instancesOf(alive)).every((n) => n === 2), 15_000);
  // Not before its last announcement had expired: the count did not drop by a lost answer.
  expect(Date.now() - killedAt).toBeGreaterThanOrEqual(2 * ANNOUNCE_MS);
  expect(await client.zcard(key)).toBe(2);

  server.pause();
  try {
    const floods = await Promise.all(alive.map((w) => ask(w, { type: 'flood', subject: 'flooder-2', requests: 200 })));
    // The share grew back: floor(30 / 2) each, decided at the deadline (Redis stopped, not gone).
    expect(floods.map((f) => f.flood!.admitted)).toEqual([15, 15]);
    for (const f of floods) expect(Object.keys(f.flood!.byReason).sort()).toEqual(['fail-local']);
  } finally {
    server.resume();
    for (const w of alive) w.kill('SIGKILL');
  }
}, 90_000);

it('limiters of one process on one connection share one announcement; health() shows the count; a fixed instances sends none', async () => {
  const prefix = rnd();
  const store = new RedisStore({ client, announceMs: ANNOUNCE_MS });
  const limiters = Array.from({ length: 5 }, (_, i) => createLimiter({ store: i % 2 ? store : new RedisStore({ client, announceMs: ANNOUNCE_MS }), prefix, limit: 10, windowMs: '1m', logger: quiet }));
  await waitFor('the first count', () => limiters.every((l) => l.health().fleets?.[0]?.learnedAt !== null), 5_000);
  const before = (await server.commandStats()).zcard ?? 0;
  const from = performance.now();
  await sleep(6 * ANNOUNCE_MS);
  const counted = ((await server.commandStats()).zcard ?? 0) - before;
  const periods = (performance.now() - from) / ANNOUNCE_MS;
  // One announcement per period for all five (a late timer only sends fewer), not one per limiter.
  expect(counted).toBeGreaterThanOrEqual(1);
  expect(counted).toBeLessThanOrEqual(Math.ceil(periods) + 1);
  expect(await client.zcard(`${prefix}.instances`)).toBe(1);
  // failures: an announcement may pass its bound (min(announceMs, 5 s)) on a loaded machine; learning the count is what is checked.
  expect(limiters[0].health().fleets).toEqual([{ prefix, instances: 1, source: 'learned', learned: true, learnedAt: expect.any(String), failures: expect.any(Number) }]);

  const fixed = rnd();
  const four = createLimiter({ store, prefix: fixed, limit: 10, windowMs: '1m', instances: 4, logger: quiet });
  expect((await four.consume('a')).allowed).toBe(true);
  await sleep(2 * ANNOUNCE_MS);
  expect(await client.exists(`${fixed}.instances`)).toBe(0);
  expect(four.health().fleets).toEqual([{ prefix: fixed, instances: 4, source: 'fixed', learned: false, learnedAt: null, failures: 0 }]);
  // MemoryStore learns nothing: one instance, nothing to show.
  expect(createLimiter({ store: new MemoryStore(), limit: 10, windowMs: '1m' }).health().fleets).toBeUndefined();
}, 30_000);

it('before the first answer no count is assumed (a fleet that starts during an outage): a share of 1 unit per subject, source unlearned; with minInstances, its share of that many', async () => {
  await whilePaused(server, async () => {
    // The breaker opens at the first timeout (another subject's), so the flood's requests are never sent: none is pending in Redis.
    const limiter = createLimiter({ store: new RedisStore({ client, announceMs: ANNOUNCE_MS }), prefix: rnd(), limit: 7, windowMs: '1h', logger: quiet, breaker: { failureThreshold: 1 } });
    await limiter.consume('opener');
    const decisions = await Promise.all(Array.from({ length: 20 }, () => limiter.consume('early')));
    // Issue 49: the whole limit (7) before; a new instance must not hold a full limit of its own.
    expect(decisions.filter((d) => d.allowed).length).toBe(1);
    expect(decisions.every((d) => d.reason === 'fail-local')).toBe(true);
    await sleep(2 * ANNOUNCE_MS);
    const fleet = limiter.health().fleets![0];
    expect({ instances: fleet.instances, source: fleet.source, learnedAt: fleet.learnedAt }).toEqual({ instances: null, source: 'unlearned', learnedAt: null });
    // The app's declared floor: floor(7 / 3) = 2.
    const floored = createLimiter({ store: new RedisStore({ client, announceMs: ANNOUNCE_MS }), prefix: rnd(), limit: 7, windowMs: '1h', logger: quiet, minInstances: 3, breaker: { failureThreshold: 1 } });
    await floored.consume('opener');
    const more = await Promise.all(Array.from({ length: 20 }, () => floored.consume('early')));
    expect(more.filter((d) => d.allowed).length).toBe(2);
    expect(floored.health().fleets![0]).toMatchObject({ instances: 3, source: 'declared' });
  });
}, 30_000);
