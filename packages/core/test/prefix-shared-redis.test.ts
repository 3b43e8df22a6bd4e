// Two apps on one Redis that leave `prefix` at its default are told so once (FG_PREFIX_SHARED); scaled instances of one app are not. Real redis-server, one process per instance.
import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { startRedis, waitFor, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import { createLimiter, RedisStore } from '../src';
import { limiterFrom, type EngineLimiter } from '../src/engine/limiter';
import type { PrefixWorkerSetup } from './prefix-worker';

const ROOT = join(__dirname, '..', '..', '..');
// Short periods, so that the instances meet within a second or two (the default is 5 s).
const ANNOUNCE_MS = 200;

interface Report {
  warnings: string[];
  instances: number | undefined;
}

const servers: RedisServer[] = [];
const clients: Redis[] = [];
const children: ChildProcess[] = [];

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  for (const client of clients) client.disconnect();
  await Promise.all(servers.map((s) => s.stop()));
});

/** A redis-server of this test's own (the default prefix is used as is: nothing else writes there). */
async function redis(): Promise<{ server: RedisServer; client: Redis }> {
  const server = await startRedis();
  servers.push(server);
  const client = server.client({ autoResendUnfulfilledCommands: false });
  clients.push(client);
  return { server, client };
}

function start(setup: PrefixWorkerSetup): Promise<ChildProcess> {
  const child = fork(join(__dirname, 'prefix-worker.ts'), [JSON.stringify(setup)], {
    cwd: ROOT,
    execArgv: ['-r', join(__dirname, 'race', 'swc-register.js')],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    child.once('message', () => resolve(child));
    child.once('exit', (code) => reject(new Error(`prefix worker exited with ${code} before it was ready`)));
  });
}

function report(child: ChildProcess): Promise<Report> {
  return new Promise((resolve) => {
    child.once('message', (r: Report) => resolve(r));
    child.send('report');
  });
}

/** Each instance's record in fg.configs: its expiry (Redis ms), which moves on at each of its announcements. */
async function records(client: Redis): Promise<Record<string, number>> {
  const all = await client.hgetall('fg.configs');
  return Object.fromEntries(Object.values(all).map((record) => [record.split('|')[1], Number(record.split('|')[0])]));
}

const codes = (r: Report) => r.warnings.map((w) => /FG_[A-Z_]+/.exec(w)?.[0]);

it('two apps with different limits on one Redis and the default prefix: each is warned once, naming the prefix option', async () => {
  const { server, client } = await redis();
  const apps = await Promise.all([100, 5].map((limit) => start({ port: server.port, limit, announceMs: ANNOUNCE_MS })));
  await waitFor('both apps to write FG_PREFIX_SHARED', async () => (await Promise.all(apps.map(report))).every((r) => r.warnings.length > 0));
  // Each announces (and compares) again: still once each. They count each other, which is what the warning says.
  const seen = await records(client);
  await waitFor('each app to announce again', async () => {
    const now = await records(client);
    return Object.keys(seen).every((id) => now[id] > seen[id]);
  });
  const reports = await Promise.all(apps.map(report));
  expect(reports.map((r) => r.instances)).toEqual([2, 2]);
  for (const r of reports) {
    expect(codes(r)).toEqual(['FG_PREFIX_SHARED']);
    expect(r.warnings[0]).toContain("prefix 'fg'");
    expect(r.warnings[0]).toContain('`prefix` option');
  }
}, 60_000);

it('the same configuration twice (scaled instances of one app): counted as 2, no warning', async () => {
  const { server, client } = await redis();
  const instances = await Promise.all([0, 1].map(() => start({ port: server.port, limit: 100, announceMs: ANNOUNCE_MS })));
  await waitFor('both instances to record their configuration', async () => Object.keys(await records(client)).length === 2);
  // Each has announced (and compared) again since both records were there: its own record moved on.
  const seen = await records(client);
  await waitFor('each instance to announce again', async () => {
    const now = await records(client);
    return Object.keys(seen).every((id) => now[id] > seen[id]);
  });
  const reports = await Promise.all(instances.map(report));
  expect(reports.map((r) => r.instances)).toEqual([2, 2]);
  expect(reports.map(codes)).toEqual([[], []]);
}, 60_000);

it("a limiter made for a request (an API key's plan) is left out of the configuration an instance records", async () => {
  const { client } = await redis();
  const store = new RedisStore({ client, announceMs: ANNOUNCE_MS });
  const quiet = { warn() {}, error() {} };
  const route = createLimiter({ store, prefix: 'pl', limit: 10, windowMs: '1m', logger: quiet }) as EngineLimiter;
  // What http/plans.ts builds at a plan's first request: the route's options with the plan's limits.
  const planLimits = (createLimiter({ store, prefix: 'other', limit: 999, windowMs: '1h', logger: quiet }) as EngineLimiter).options;
  const plan = limiterFrom({ ...route.options, limits: planLimits.limits, maxCost: planLimits.maxCost, madeForRequest: true });
  const record = async () => (await client.hvals('pl.configs'))[0]?.split('|');
  await waitFor('the instance to record its configuration', async () => (await record()) !== undefined);
  const first = Number((await record())![0]);
  await waitFor('another announcement', async () => Number((await record())![0]) > first);
  // One digest: the route's. Traffic-made plans differ between instances of one app, and would read as another app.
  expect((await record())![2].split(',')).toHaveLength(1);
  expect(plan.options.madeForRequest).toBe(true);
}, 60_000);
