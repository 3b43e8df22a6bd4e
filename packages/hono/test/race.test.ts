// The race through Hono: 8 processes, each a Hono app on @hono/node-server, 400 requests in flight at once each on one subject, limit 100: exactly 100 admitted, every algorithm.
import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { RedisStore, createLimiter } from '@floodgate/core';
import { startRedis, whilePaused, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import { RACE_ALGORITHMS, type HonoRaceGo, type HonoRaceReply, type HonoRaceSetup } from './race/race-child';

const PROCESSES = 8;
const IN_FLIGHT = 400;
const LIMIT = 100;
const REPO = join(__dirname, '..', '..', '..');

type Done = Extract<HonoRaceReply, { type: 'done' }>;

/** The next message of `type` from a child, or a failure naming the child. */
function next<T extends HonoRaceReply['type']>(child: ChildProcess, type: T, timeoutMs: number): Promise<Extract<HonoRaceReply, { type: T }>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => finish(new Error(`child ${child.pid}: no '${type}' within ${timeoutMs} ms`)), timeoutMs);
    const onMessage = (message: HonoRaceReply) => {
      if (message.type === 'error') finish(new Error(`child ${child.pid}: ${message.message}`));
      else if (message.type === type) finish(undefined, message as Extract<HonoRaceReply, { type: T }>);
    };
    const onExit = (code: number | null) => finish(new Error(`child ${child.pid} exited (${code}) before '${type}'`));
    function finish(error?: Error, message?: Extract<HonoRaceReply, { type: T }>) {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
      if (error) reject(error);
      else resolve(message!);
    }
    child.on('message', onMessage);
    child.on('exit', onExit);
  });
}

let redis: RedisServer;
let client: Redis;
const children: ChildProcess[] = [];
const prefix = `hrace${Math.random().toString(36).slice(2, 8)}`;
const results: Record<string, unknown> = {};

beforeAll(async () => {
  redis = await startRedis();
  client = redis.client({ autoResendUnfulfilledCommands: false });
  // The children run the TypeScript sources through SWC, with the workspace's 'source' export condition, as jest does.
  for (let i = 0; i < PROCESSES; i++) {
    children.push(
      fork(join(__dirname, 'race', 'race-child.ts'), [], {
        cwd: REPO,
        execArgv: ['-r', join(REPO, 'packages', 'core', 'test', 'race', 'swc-register.js'), '--conditions=source'],
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      }),
    );
  }
  const setup: HonoRaceSetup = { type: 'setup', redisPort: redis.port, prefix, limit: LIMIT, inFlight: IN_FLIGHT };
  await Promise.all(children.map((child) => (child.send(setup), next(child, 'ready', 60_000))));
}, 90_000);

afterAll(async () => {
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
          child.once('exit', () => (clearTimeout(timer), resolve()));
          child.connected ? child.send({ type: 'exit' }) : child.kill('SIGKILL');
        }),
    ),
  );
  client?.disconnect();
  await redis?.stop();
  console.log(`hono race: ${PROCESSES} processes x ${IN_FLIGHT} in flight, limit ${LIMIT}\n${JSON.stringify(results, null, 2)}`);
});

/**
 * One round behind a start barrier: Redis is stopped (SIGSTOP) while every child fires all its
 * requests at its own Hono server; only when each says every request reached its limiter (the
 * script calls written, waiting in Redis' socket) does Redis run again and meet them all at once.
 */
async function round(algorithm: HonoRaceGo['algorithm']): Promise<Done[]> {
  const replies = children.map((child) => ({ sent: next(child, 'sent', 60_000), done: next(child, 'done', 90_000) }));
  for (const r of replies) r.done.catch(() => undefined);
  await whilePaused(redis, async () => {
    for (const child of children) child.send({ type: 'go', algorithm } satisfies HonoRaceGo);
    await Promise.all(replies.map((r) => r.sent));
  });
  return Promise.all(replies.map((r) => r.done));
}

it.each(RACE_ALGORITHMS)(`${PROCESSES} Hono processes x ${IN_FLIGHT} requests in flight at once, limit ${LIMIT}: %s admits exactly ${LIMIT}`, async (algorithm) => {
  const done = await round(algorithm);
  const total = (pick: (d: Done) => number) => done.reduce((n, d) => n + pick(d), 0);
  const summary = {
    requests: total((d) => d.sent),
    admitted: total((d) => d.admitted),
    denied: total((d) => d.denied),
    failed: total((d) => d.failed),
    perProcess: done.map((d) => d.admitted),
    // Every request of every process was unanswered during this span (ms).
    inFlightTogetherMs: Number((Math.min(...done.map((d) => d.firstReplyAt)) - Math.max(...done.map((d) => d.lastSentAt))).toFixed(2)),
  };
  results[algorithm] = summary;
  expect({ requests: summary.requests, failed: summary.failed }).toEqual({ requests: PROCESSES * IN_FLIGHT, failed: 0 });
  expect(summary.inFlightTogetherMs).toBeGreaterThan(0);
  expect(summary.admitted).toBe(LIMIT);
  expect(summary.denied).toBe(PROCESSES * IN_FLIGHT - LIMIT);
  // Redis agrees: the subject's bucket (127.0.0.1 on GET /race/<algorithm>) is exactly full.
  const limits = algorithm === 'token-bucket' || algorithm === 'gcra' ? { burst: LIMIT, refillPerSecond: 1 / 3_600 } : { limit: LIMIT, windowMs: '1h' as const };
  const check = createLimiter({ store: new RedisStore({ client, timeoutMs: 5_000 }), prefix, algorithm, ...limits, blockCacheSize: 0 });
  const peek = await check.peek('ip:127.0.0.1', { scope: `GET /race/${algorithm}` });
  expect({ allowed: peek.allowed, remaining: peek.remaining }).toEqual({ allowed: false, remaining: 0 });
}, 120_000);
