// The figure on 2 processes sharing one real redis-server: one identity over 3 connections, 500 messages at 50 per 10 s, exactly 50 through; a 4th connection refused at 3 open, accepted once one closes and once its instance is SIGKILLed (within the lease). ws and Socket.IO.
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { leasesHeld, pollUntil, raceMessages, startRedis, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import type WebSocket from 'ws';
import type { Socket as ClientSocket } from 'socket.io-client';
import { closeWs, framesOn, openIo, openWs } from './harness';
import type { FleetReply, FleetSetup } from './fleet/socket-child';

jest.setTimeout(120_000);

const REPO = join(__dirname, '..', '..', '..');
const LEASE_MS = 5_000;
const next = raceMessages<FleetReply>();

let redis: RedisServer;
let admin: Redis;
let children: ChildProcess[] = [];
let ports: { wsPort: number; ioPort: number }[] = [];
const prefix = `sock${randomBytes(4).toString('hex')}`;

beforeAll(async () => {
  redis = await startRedis();
  admin = redis.client();
  children = [0, 1].map(() =>
    fork(join(__dirname, 'fleet', 'socket-child.ts'), [], {
      cwd: REPO,
      execArgv: ['--conditions=source', '-r', join(REPO, 'packages', 'core', 'test', 'race', 'swc-register.js')],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    }),
  );
  ports = await Promise.all(
    children.map((child) => {
      const ready = next(child, 'ready', 60_000);
      child.send({ type: 'setup', redisPort: redis.port, prefix, leaseMs: LEASE_MS } satisfies FleetSetup);
      return ready;
    }),
  );
});

afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await admin?.quit();
  await redis?.stop();
});

async function countsOf(child: ChildProcess) {
  const answer = next(child, 'counts', 10_000);
  child.send({ type: 'counts' });
  return answer;
}

/** Kills an instance the hard way and waits until it is gone. */
function sigkill(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

test('ws: 500 messages at 50 per 10 s over 3 connections on 2 instances; the 4th connection refused at 3, accepted after a close and after a SIGKILL', async () => {
  const wsUrl = (i: number) => `ws://127.0.0.1:${ports[i].wsPort}`;
  const openOk = async (i: number): Promise<WebSocket> => {
    const r = await openWs(wsUrl(i));
    if (!r.ws) throw new Error(`refused ${r.status}`);
    return r.ws;
  };
  // Two connections on instance 0, one on instance 1: one identity (127.0.0.1).
  const sockets = [await openOk(0), await openOk(0), await openOk(1)];
  const frames = framesOn(sockets, 500);
  for (let i = 0; i < 500; i++) sockets[i % 3].send(`m${i}`);
  const got = await frames;
  expect(got.filter((f) => f.startsWith('ok:'))).toHaveLength(50);
  expect(got.filter((f) => f.startsWith('{"type":"rate-limited"'))).toHaveLength(450);
  const [a, b] = [await countsOf(children[0]), await countsOf(children[1])];
  expect(a.ws.admitted + b.ws.admitted).toBe(50);
  expect(a.ws.limited + b.ws.limited).toBe(450);

  // 3 open: a 4th is refused on either instance, with Retry-After.
  for (const i of [0, 1]) expect(await openWs(wsUrl(i))).toMatchObject({ status: 429, retryAfter: expect.any(String) });
  // One closes: once instance 0 has seen it, a 4th is accepted.
  await closeWs(sockets[0]);
  await pollUntil(async () => ((await countsOf(children[0])).ws.closed >= 1 ? true : undefined), { timeoutMs: 20_000, what: 'instance 0 to see the close' });
  const fourth = await pollUntil(async () => (await openWs(wsUrl(1))).ws, { timeoutMs: 20_000, intervalMs: 50, what: 'a 4th connection after a close' });
  expect(await leasesHeld(admin, `${prefix}-ws:*:connections.cc`)).toBe(3);
  // Instance 1 (holding 2 of the 3: the 4th and sockets[2]) is killed: its leases are not released...
  await sigkill(children[1]);
  fourth.terminate();
  sockets[2].terminate();
  expect(await openWs(wsUrl(0))).toMatchObject({ status: 429 });
  // ...and expire within the lease: then connections are accepted again on the surviving instance.
  await pollUntil(async () => ((await leasesHeld(admin, `${prefix}-ws:*:connections.cc`)) === 1 ? true : undefined), { timeoutMs: LEASE_MS * 4, intervalMs: 100, what: "the killed instance's leases to expire" });
  const after = await openWs(wsUrl(0));
  expect(after.ws).toBeDefined();
  after.ws?.terminate();
  sockets[1].terminate();
});

test('Socket.IO: 500 events at 50 per 10 s over 3 connections on 2 instances; the 4th connection refused at 3, accepted after a disconnect and after a SIGKILL', async () => {
  // Instance 1 was killed by the ws test when both run; fork a fresh one for this test on the same Redis.
  if (children[1].exitCode !== null || children[1].signalCode !== null) {
    children[1] = fork(join(__dirname, 'fleet', 'socket-child.ts'), [], {
      cwd: REPO,
      execArgv: ['--conditions=source', '-r', join(REPO, 'packages', 'core', 'test', 'race', 'swc-register.js')],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const ready = next(children[1], 'ready', 60_000);
    children[1].send({ type: 'setup', redisPort: redis.port, prefix, leaseMs: LEASE_MS } satisfies FleetSetup);
    ports[1] = await ready;
  }
  const ioUrl = (i: number) => `http://127.0.0.1:${ports[i].ioPort}`;
  const openOk = async (i: number): Promise<ClientSocket> => {
    const r = await openIo(ioUrl(i));
    if (!r.socket) throw new Error(`refused ${JSON.stringify(r.refused)}`);
    return r.socket;
  };
  const sockets = [await openOk(0), await openOk(0), await openOk(1)];
  const answers = await Promise.all(Array.from({ length: 500 }, (_, i) => sockets[i % 3].emitWithAck('chat', i)));
  expect(answers.filter((x) => x.ok === 'chat')).toHaveLength(50);
  expect(answers.filter((x) => x.type === 'rate-limited' && x.retryAfterMs > 0)).toHaveLength(450);
  const [a, b] = [await countsOf(children[0]), await countsOf(children[1])];
  expect(a.io.admitted + b.io.admitted).toBe(50);

  for (const i of [0, 1]) expect((await openIo(ioUrl(i))).refused).toMatchObject({ status: 429 });
  sockets[0].close();
  await pollUntil(async () => ((await countsOf(children[0])).io.closed >= 1 ? true : undefined), { timeoutMs: 20_000, what: 'instance 0 to see the disconnect' });
  const fourth = await pollUntil(async () => (await openIo(ioUrl(1))).socket, { timeoutMs: 20_000, intervalMs: 50, what: 'a 4th connection after a disconnect' });
  expect(await leasesHeld(admin, `${prefix}-io:*:connections.cc`)).toBe(3);
  await sigkill(children[1]);
  fourth.close();
  sockets[2].close();
  expect((await openIo(ioUrl(0))).refused).toMatchObject({ status: 429 });
  await pollUntil(async () => ((await leasesHeld(admin, `${prefix}-io:*:connections.cc`)) === 1 ? true : undefined), { timeoutMs: LEASE_MS * 4, intervalMs: 100, what: "the killed instance's leases to expire" });
  const after = await openIo(ioUrl(0));
  expect(after.socket).toBeDefined();
  after.socket?.close();
  sockets[1].close();
});
