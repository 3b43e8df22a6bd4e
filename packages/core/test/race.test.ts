// Race test: separate Node processes, hundreds of requests in flight on one subject, one redis-server: every algorithm admits exactly its limit; the naive GET-then-INCR control over-admits.
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startRedis, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import { createLimiter, RedisStore, type AlgorithmName } from '../src';
import type { RaceGo, RaceReply, RaceSetup } from './race/race-child';
import { next, startChildren, stopChildren } from './race/race-harness';

const PROCESSES = 4;
const IN_FLIGHT = Number(process.env.FLOODGATE_RACE_IN_FLIGHT ?? 150); // per process, all at once
const LIMIT = 100;
const ROUNDS: readonly (AlgorithmName | 'naive')[] = ['naive', 'fixed-window', 'sliding-window-log', 'sliding-window-counter', 'token-bucket', 'gcra'];
const REPO = join(__dirname, '..', '..', '..');
const ARTIFACT = join(REPO, '.artifacts', 'race-results.json');

type Done = Extract<RaceReply, { type: 'done' }>;

let server: RedisServer;
let client: Redis;
const children: ChildProcess[] = [];
const prefix = `race-${Math.random().toString(36).slice(2, 8)}`;


beforeAll(async () => {
  server = await startRedis();
  client = server.client({ autoResendUnfulfilledCommands: false });
  const setup: RaceSetup = { type: 'setup', port: server.port, prefix, limit: LIMIT, inFlight: IN_FLIGHT };
  children.push(...(await startChildren(PROCESSES, setup)));
}, 60_000);

afterAll(async () => {
  await stopChildren(children);
  client?.disconnect();
  await server?.stop();
});

it(`${PROCESSES} processes x ${IN_FLIGHT} requests in flight on one subject: each algorithm admits exactly ${LIMIT}; GET-then-INCR does not`, async () => {
  const results: Record<string, unknown> = {};
  const subject = 'one-shared-subject';
  const naiveKey = `${prefix}:naive`;
  await client.set(naiveKey, '0', 'PX', 3_600_000); // so that the control's key has a TTL as well
  const store = new RedisStore({ client, timeoutMs: 5_000 });

  for (const round of ROUNDS) {
    const go: RaceGo = { type: 'go', round, subject, naiveKey };
    const done = await Promise.all(
      children.map((child) => {
        const reply = next(child, 'done', 40_000);
        child.send(go);
        return reply;
      }),
    );
    const sum = (pick: (d: Done) => number) => done.reduce((total, d) => total + pick(d), 0);
    // The bursts overlapped in time: the last process started before the first one finished.
    const overlapMs = Math.min(...done.map((d) => d.endedAt)) - Math.max(...done.map((d) => d.startedAt));
    const summary = {
      requests: sum((d) => d.sent),
      admitted: sum((d) => d.admitted),
      denied: sum((d) => d.denied),
      failed: sum((d) => d.failed),
      perProcess: done.map((d) => d.admitted),
      inFlightAtFirstReply: done.map((d) => d.inFlightAtFirstReply),
      overlapMs,
    };
    results[round] = round === 'naive' ? { ...summary, counterInRedis: Number(await client.get(naiveKey)) } : summary;

    expect({ round, failed: summary.failed, requests: summary.requests }).toEqual({ round, failed: 0, requests: PROCESSES * IN_FLIGHT });
    expect(summary.inFlightAtFirstReply.every((n) => n >= 100)).toBe(true);
    if (round === 'naive') {
      expect(summary.admitted).toBeGreaterThan(LIMIT);
    } else {
      expect({ round, admitted: summary.admitted }).toEqual({ round, admitted: LIMIT });
      expect(summary.denied).toBe(PROCESSES * IN_FLIGHT - LIMIT);
      // Redis agrees: the subject is exactly full.
      const check = createLimiter({ store, prefix, algorithm: round, ...(round === 'token-bucket' || round === 'gcra' ? { burst: LIMIT, refillPerSecond: 1 / 3600 } : { limit: LIMIT, windowMs: '1h' }), blockCacheSize: 0, failMode: 'closed' });
      const peek = await check.peek(subject);
      expect({ round, allowed: peek.allowed, remaining: peek.remaining, degraded: peek.degraded }).toEqual({ round, allowed: false, remaining: 0, degraded: false });
    }
  }

  // Every key written on Redis' own clock has a TTL: one per algorithm, plus the control's.
  const keys = await client.keys(`${prefix}:*`);
  const ttls = await Promise.all(keys.map((key) => client.pttl(key)));
  expect(keys.length).toBe(ROUNDS.length);
  expect(ttls.every((ttl) => ttl > 0)).toBe(true);

  const report = { processes: PROCESSES, inFlightPerProcess: IN_FLIGHT, limit: LIMIT, rounds: results };
  console.log(`race results:\n${JSON.stringify(report, null, 2)}`);
  mkdirSync(join(REPO, '.artifacts'), { recursive: true });
  writeFileSync(ARTIFACT, `${JSON.stringify({ ...report, at: new Date().toISOString() }, null, 2)}\n`);
}, 60_000);
