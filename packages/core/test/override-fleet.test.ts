// Issue #45's proof on a real Redis with separate processes: an override set through one of 4 HTTP servers changes the next decision of every one, and expires by itself; 8 processes x 400 in flight race one subject while its override changes from 100 to 10, and every decision follows the limit in force when Redis ran it.
import { fork, type ChildProcess } from 'node:child_process';
import { request as httpRequest, Agent } from 'node:http';
import { join } from 'node:path';
import { startRedis, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import { createLimiter, RedisStore } from '../src';
import type { OverrideWorkerSetup, RacerDecision, RacerRequest } from './override-worker';

const ROOT = join(__dirname, '..', '..', '..');
let server: RedisServer;
let client: Redis;
const children: ChildProcess[] = [];
const agent = new Agent({ keepAlive: true });
const rnd = () => `ovf-${Math.random().toString(36).slice(2, 8)}`;

beforeAll(async () => {
  server = await startRedis();
  client = server.client({ autoResendUnfulfilledCommands: false });
}, 30_000);

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  agent.destroy();
  client?.disconnect();
  await server?.stop();
});

function start<T>(setup: OverrideWorkerSetup): Promise<{ child: ChildProcess; hello: T }> {
  const child = fork(join(__dirname, 'override-worker.ts'), [JSON.stringify(setup)], {
    cwd: ROOT,
    execArgv: ['-r', join(__dirname, 'race', 'swc-register.js')],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    child.once('message', (hello: T) => resolve({ child, hello }));
    child.once('exit', (code) => reject(new Error(`override worker exited with ${code} before it was ready`)));
  });
}

function send(port: number, method: string, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, agent, headers: { 'x-client': '203.0.113.9' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

it('4 server processes: an override set through one changes the next request on every one (no delay), and ends by itself', async () => {
  const prefix = rnd();
  const ports = (await Promise.all([0, 1, 2, 3].map(() => start<{ port: number }>({ mode: 'server', port: server.port, prefix, limit: 100 })))).map((w) => w.hello.port);
  expect(await Promise.all(ports.map((p) => send(p, 'GET', '/r')))).toEqual([200, 200, 200, 200]);
  expect(await send(ports[0], 'POST', '/admin/override?ip=203.0.113.9&limit=0&ttlMs=3600000')).toBe(204);
  // The very next request on each instance: refused.
  for (const p of ports) expect(await send(p, 'GET', '/r')).toBe(429);
  // Set again through another instance, for 300 ms: the key carries that TTL in Redis, which deletes it.
  expect(await send(ports[2], 'POST', '/admin/override?ip=203.0.113.9&limit=0&ttlMs=300')).toBe(204);
  const [key] = await client.keys(`${prefix}:*:ovr`);
  const ttl = await client.pttl(key);
  expect(ttl).toBeGreaterThan(0);
  expect(ttl).toBeLessThanOrEqual(300);
  while ((await client.exists(key)) === 1) await new Promise((r) => setTimeout(r, 20));
  expect(await Promise.all(ports.map((p) => send(p, 'GET', '/r')))).toEqual([200, 200, 200, 200]);
}, 60_000);

it('8 processes x 400 in flight on one subject while its override changes from 100 to 10: every decision follows the limit in force, counts exact', async () => {
  const prefix = rnd();
  const racers = (await Promise.all([0, 1, 2, 3, 4, 5, 6, 7].map(() => start<{ ready: boolean }>({ mode: 'racer', port: server.port, prefix, limit: 1000 })))).map((w) => w.child);
  const ask = <T>(child: ChildProcess, request: RacerRequest) =>
    new Promise<T>((resolve) => {
      child.once('message', (reply: T) => resolve(reply));
      child.send(request);
    });
  await ask(racers[0], { type: 'override', subject: 'hot', limit: 100 });
  // Racer 0 sets 10 as soon as its first decision is back, while the 3,200 are in flight.
  const replies = await Promise.all(racers.map((r, i) => ask<{ decisions: RacerDecision[] }>(r, { type: 'race', subject: 'hot', requests: 400, switchTo: i === 0 ? 10 : undefined })));
  const all = replies.flatMap((r) => r.decisions);
  expect(all).toHaveLength(3200);
  expect(all.every((d) => d.reason === 'allowed' || d.reason === 'limited')).toBe(true);
  expect(new Set(all.map((d) => d.limit))).toEqual(new Set([100, 10]));
  const admitted = all.filter((d) => d.allowed);
  // Each admitted decision took the next unit: its count (limit - remaining) is unique, 1..N, and within the limit in force.
  const counts = admitted.map((d) => d.limit! - d.remaining!).sort((a, b) => a - b);
  expect(counts).toEqual(Array.from({ length: admitted.length }, (_, i) => i + 1));
  for (const d of admitted) expect(d.limit! - d.remaining!).toBeLessThanOrEqual(d.limit!);
  // Each refusal found its limit in force used up.
  for (const d of all.filter((x) => !x.allowed)) expect(d.remaining).toBe(0);
  // No unit lost or made up: Redis holds exactly the admitted count.
  const [stateKey] = await client.keys(`${prefix}:*:default.fw`);
  expect(Number(await client.hget(stateKey, 'c'))).toBe(admitted.length);
  const under = (limit: number, allowed: boolean) => all.filter((d) => d.limit === limit && d.allowed === allowed).length;
  // The figures (docs/runtime-limits.md#proof): printed for the note.
  process.stderr.write(
    `override race: admitted ${admitted.length} of 3200 (under 100: ${under(100, true)} admitted, ${under(100, false)} refused; under 10: ${under(10, true)} admitted, ${under(10, false)} refused)\n`,
  );
  // A later consume anywhere sees 10.
  const check = createLimiter({ store: new RedisStore({ client, timeoutMs: 5000 }), prefix, algorithm: 'fixed-window', limit: 1000, windowMs: '365d', overrides: true });
  expect(await check.peek('hot')).toMatchObject({ limit: 10 });
}, 120_000);
