// The race through Hono: 8 processes, each a Hono app on @hono/node-server, 400 requests in flight at once each on one subject, limit 100: exactly 100 admitted, every algorithm.
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { RedisStore, createLimiter } from '@floodgate/core';
import { allInFlightTogether, forkRaceChildren, inFlightTogetherMs, raceRound, startRedis, stopRaceChildren, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import { RACE_ALGORITHMS, type HonoRaceGo, type HonoRaceReply, type HonoRaceSetup } from './race/race-child';

const PROCESSES = 8;
const IN_FLIGHT = 400;
const LIMIT = 100;
const REPO = join(__dirname, '..', '..', '..');

let redis: RedisServer;
let client: Redis;
const children: ChildProcess[] = [];
const prefix = `hrace${Math.random().toString(36).slice(2, 8)}`;
const results: Record<string, unknown> = {};

beforeAll(async () => {
  redis = await startRedis();
  client = redis.client({ autoResendUnfulfilledCommands: false });
  // The children run the TypeScript sources through SWC, with the workspace's 'source' export condition, as jest does.
  const setup: HonoRaceSetup = { type: 'setup', redisPort: redis.port, prefix, limit: LIMIT, inFlight: IN_FLIGHT };
  children.push(
    ...(await forkRaceChildren(PROCESSES, {
      entry: join(__dirname, 'race', 'race-child.ts'),
      execArgv: ['-r', join(REPO, 'packages', 'core', 'test', 'race', 'swc-register.js'), '--conditions=source'],
      cwd: REPO,
      setup,
      readyMs: 60_000,
    })),
  );
}, 90_000);

afterAll(async () => {
  await stopRaceChildren(children);
  client?.disconnect();
  await redis?.stop();
  console.log(`hono race: ${PROCESSES} processes x ${IN_FLIGHT} in flight, limit ${LIMIT}\n${JSON.stringify(results, null, 2)}`);
});

/**
 * One round behind the start barrier of @floodgate/testing's raceRound: Redis is stopped (SIGSTOP)
 * while every child fires all its requests at its own Hono server; only when each says every
 * request reached its limiter (the script calls written, waiting in Redis' socket) does Redis run
 * again and meet them all at once.
 */
const round = (algorithm: HonoRaceGo['algorithm']) =>
  raceRound<HonoRaceReply>(children, { type: 'go', algorithm } satisfies HonoRaceGo, redis, { sentMs: 60_000, doneMs: 90_000 });

it.each(RACE_ALGORITHMS)(`${PROCESSES} Hono processes x ${IN_FLIGHT} requests in flight at once, limit ${LIMIT}: %s admits exactly ${LIMIT}`, async (algorithm) => {
  const done = await round(algorithm);
  const total = (pick: (d: (typeof done)[number]) => number) => done.reduce((n, d) => n + pick(d), 0);
  const summary = {
    requests: total((d) => d.sent),
    admitted: total((d) => d.admitted),
    denied: total((d) => d.denied),
    failed: total((d) => d.failed),
    perProcess: done.map((d) => d.admitted),
    // Behind the checked barrier, every process's first answer came after its own last send.
    together: allInFlightTogether(done),
    // For the report: the span every request was unanswered (ms, across processes' clocks).
    inFlightTogetherMs: Number(inFlightTogetherMs(done).toFixed(2)),
  };
  results[algorithm] = summary;
  expect({ requests: summary.requests, failed: summary.failed }).toEqual({ requests: PROCESSES * IN_FLIGHT, failed: 0 });
  expect(summary.together).toBe(true);
  expect(summary.admitted).toBe(LIMIT);
  expect(summary.denied).toBe(PROCESSES * IN_FLIGHT - LIMIT);
  // Redis agrees: the subject's bucket (127.0.0.1 on GET /race/<algorithm>) is exactly full.
  const limits = algorithm === 'token-bucket' || algorithm === 'gcra' ? { burst: LIMIT, refillPerSecond: 1 / 3_600 } : { limit: LIMIT, windowMs: '1h' as const };
  const check = createLimiter({ store: new RedisStore({ client, timeoutMs: 5_000 }), prefix, algorithm, ...limits, blockCacheSize: 0 });
  const peek = await check.peek('ip:127.0.0.1', { scope: `GET /race/${algorithm}` });
  expect({ allowed: peek.allowed, remaining: peek.remaining }).toEqual({ allowed: false, remaining: 0 });
}, 120_000);
