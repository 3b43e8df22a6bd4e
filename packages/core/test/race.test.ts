// Race test: separate Node processes, hundreds of requests in flight at once on one subject, one redis-server, on ioredis and node-redis: every algorithm admits exactly its limit; the naive GET-then-INCR control over-admits.
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startRedis, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import { createLimiter, RedisStore, type AlgorithmName } from '../src';
import { modePrefix, RACE_CLIENTS, type RaceClient, type RaceCoalesce, type RaceGo, type RaceReply, type RaceSetup } from './race/race-child';
import { allInFlightTogether, inFlightTogetherMs, raceRound, startChildren, stopChildren, TURN_BATCH } from './race/race-harness';

const PROCESSES = 4;
const IN_FLIGHT = Number(process.env.FLOODGATE_RACE_IN_FLIGHT ?? 150); // per process, all at once
const LIMIT = 100;
const ALGORITHMS: readonly AlgorithmName[] = ['fixed-window', 'sliding-window-log', 'sliding-window-counter', 'token-bucket', 'gcra'];
const REPO = join(__dirname, '..', '..', '..');
const ARTIFACT = join(REPO, '.artifacts', 'race-results.json');

type Done = Extract<RaceReply, { type: 'done' }>;

let server: RedisServer;
let client: Redis;
const run = Math.random().toString(36).slice(2, 8);
/** Results per client, then per coalescing mode. */
const results: Record<string, Record<string, Record<string, unknown>>> = {};

beforeAll(async () => {
  server = await startRedis();
  client = server.client({ autoResendUnfulfilledCommands: false });
}, 60_000);

afterAll(async () => {
  client?.disconnect();
  await server?.stop();
  const report = { processes: PROCESSES, inFlightPerProcess: IN_FLIGHT, limit: LIMIT, clients: results };
  console.log(`race results:\n${JSON.stringify(report, null, 2)}`);
  mkdirSync(join(REPO, '.artifacts'), { recursive: true });
  writeFileSync(ARTIFACT, `${JSON.stringify({ ...report, at: new Date().toISOString() }, null, 2)}\n`);
});

/** One round behind the start barrier, with the script calls Redis counted for it. */
async function round(children: ChildProcess[], go: RaceGo) {
  await server.resetStats();
  const done: Done[] = await raceRound(children, go, server);
  const commands = await server.commandStats();
  const sum = (pick: (d: Done) => number) => done.reduce((total, d) => total + pick(d), 0);
  return {
    requests: sum((d) => d.sent),
    admitted: sum((d) => d.admitted),
    denied: sum((d) => d.denied),
    failed: sum((d) => d.failed),
    perProcess: done.map((d) => d.admitted),
    // Behind the checked barrier, every process's first answer came after its own last send.
    together: allInFlightTogether(done),
    // For the report: the span every request was unanswered (ms, across processes' clocks).
    inFlightTogetherMs: Number(inFlightTogetherMs(done).toFixed(2)),
    scriptCalls: { evalsha: commands.evalsha ?? 0, eval: commands.eval ?? 0 },
    // The control's commands (scripts' own calls count here too, so read them for the control only).
    commands: { get: commands.get ?? 0, incr: commands.incr ?? 0 },
  };
}

async function raceEveryAlgorithm(children: ChildProcess[], kind: RaceClient, coalesce: RaceCoalesce, scriptCallsPerRound: number): Promise<void> {
  const own = modePrefix(prefixFor(kind), coalesce);
  const mode = ((results[kind] ??= {})[String(coalesce)] = {} as Record<string, unknown>);
  const store = new RedisStore({ client, timeoutMs: 5_000 });
  const subject = 'one-shared-subject';
  const rounds: (AlgorithmName | 'naive')[] = coalesce === false ? ['naive', ...ALGORITHMS] : [...ALGORITHMS];
  const naiveKey = `${own}:naive`;
  if (rounds.includes('naive')) await client.set(naiveKey, '0', 'PX', 3_600_000); // so that the control's key has a TTL as well

  for (const name of rounds) {
    const summary = await round(children, { type: 'go', round: name, coalesce, subject, naiveKey });
    mode[name] = summary;
    expect({ name, failed: summary.failed, requests: summary.requests }).toEqual({ name, failed: 0, requests: PROCESSES * IN_FLIGHT });
    // No process had an answer before every process had sent all of its requests.
    expect({ name, together: summary.together }).toEqual({ name, together: true });
    if (name === 'naive') {
      expect(summary.commands.get).toBe(PROCESSES * IN_FLIGHT);
      expect(summary.admitted).toBeGreaterThan(LIMIT);
      expect(Number(await client.get(naiveKey))).toBe(summary.admitted);
      continue;
    }
    // Redis ran the script calls the mode promises: one per request, or one per turn per process.
    expect({ name, ...summary.scriptCalls }).toEqual({ name, evalsha: scriptCallsPerRound, eval: 0 });
    expect({ name, admitted: summary.admitted }).toEqual({ name, admitted: LIMIT });
    expect(summary.denied).toBe(PROCESSES * IN_FLIGHT - LIMIT);
    // Redis agrees: the subject is exactly full.
    const check = createLimiter({ store, prefix: own, algorithm: name, ...(name === 'token-bucket' || name === 'gcra' ? { burst: LIMIT, refillPerSecond: 1 / 3600 } : { limit: LIMIT, windowMs: '1h' }), blockCacheSize: 0, failMode: 'closed' });
    const peek = await check.peek(subject);
    expect({ name, allowed: peek.allowed, remaining: peek.remaining, degraded: peek.degraded }).toEqual({ name, allowed: false, remaining: 0, degraded: false });
  }

  // Every key written on Redis' own clock has a TTL: one per algorithm (plus the control's).
  const keys = await client.keys(`${own}:*`);
  const ttls = await Promise.all(keys.map((key) => client.pttl(key)));
  expect(keys.length).toBe(rounds.length);
  expect(ttls.every((ttl) => ttl > 0)).toBe(true);
}

/** Each client's children write under their own prefix on the one server. */
const prefixFor = (kind: RaceClient) => `race-${run}-${kind === 'node-redis' ? 'nr' : 'io'}`;

describe.each(RACE_CLIENTS)('on %s', (kind) => {
  const children: ChildProcess[] = [];
  beforeAll(async () => {
    const setup: RaceSetup = { type: 'setup', port: server.port, client: kind, prefix: prefixFor(kind), limit: LIMIT, inFlight: IN_FLIGHT };
    children.push(...(await startChildren(PROCESSES, setup)));
  }, 60_000);
  afterAll(() => stopChildren(children));

  it(`no coalescing: ${PROCESSES} processes x ${IN_FLIGHT} requests in flight at once, one script call each: each algorithm admits exactly ${LIMIT}; GET-then-INCR does not`, async () => {
    await raceEveryAlgorithm(children, kind, false, PROCESSES * IN_FLIGHT);
  }, 90_000);

  it(`default coalescing ('turn'): the same race, ${Math.ceil(IN_FLIGHT / TURN_BATCH)} script calls per process, each algorithm admits exactly ${LIMIT}`, async () => {
    await raceEveryAlgorithm(children, kind, 'turn', PROCESSES * Math.ceil(IN_FLIGHT / TURN_BATCH));
  }, 90_000);
});
