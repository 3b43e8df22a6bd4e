// The race through Nest: 8 processes, each with a Nest app per platform on one redis-server, 400 requests each in flight at once on one subject: every algorithm admits exactly its limit, on Express and on Fastify.
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { allInFlightTogether, forkRaceChildren, inFlightTogetherMs, raceRound, startRedis, stopRaceChildren, type RedisServer } from '@floodgate/testing';
import { RACE_ALGORITHMS, type NestRaceGo, type NestRacePlatform, type NestRaceReply, type NestRaceSetup } from './race/nest-race-child';

const PROCESSES = 8;
const IN_FLIGHT = Number(process.env.FLOODGATE_RACE_IN_FLIGHT ?? 400); // per process, all at once
const LIMIT = 100;
const REPO = join(__dirname, '..', '..', '..');
const ARTIFACT = join(REPO, '.artifacts', 'nest-race-results.json');

const PLATFORMS: readonly NestRacePlatform[] = ['express', 'fastify'];

let server: RedisServer;
/** The 8 processes, each with one app per platform (a prefix each): started once for both platforms' rounds. */
let children: ChildProcess[] = [];
const results: Record<string, Record<string, unknown>> = {};

beforeAll(async () => {
  server = await startRedis();
  children = await start(`nestrace-${Math.random().toString(36).slice(2, 8)}`);
}, 180_000);

afterAll(async () => {
  await stopRaceChildren(children.splice(0));
  await server?.stop();
  const report = { processes: PROCESSES, inFlightPerProcess: IN_FLIGHT, limit: LIMIT, platforms: results };
  console.log(`nest race results:\n${JSON.stringify(report, null, 2)}`);
  mkdirSync(join(REPO, '.artifacts'), { recursive: true });
  writeFileSync(ARTIFACT, `${JSON.stringify({ ...report, at: new Date().toISOString() }, null, 2)}\n`);
}, 60_000);

/** Forks the children: the TypeScript sources through SWC with Nest's decorators, workspace packages from their sources. */
async function start(prefix: string): Promise<ChildProcess[]> {
  return forkRaceChildren(PROCESSES, {
    entry: join(__dirname, 'race', 'nest-race-child.ts'),
    execArgv: ['--conditions=source', '-r', join(__dirname, 'race', 'swc-register.js')],
    cwd: REPO,
    setup: { type: 'setup', platforms: PLATFORMS, redisPort: server.port, prefix, limit: LIMIT, inFlight: IN_FLIGHT } satisfies NestRaceSetup,
    readyMs: 120_000,
  });
}

/**
 * One round behind the start barrier of @floodgate/testing's raceRound: Redis is stopped
 * (SIGSTOP) while every child fires its requests, and runs again only when every request of every
 * child has reached its guard, so all of them are in flight together.
 */
async function round(list: ChildProcess[], go: NestRaceGo) {
  await server.resetStats();
  const done = await raceRound<NestRaceReply>(list, go, server, { sentMs: 120_000, doneMs: 120_000 });
  const stats = await server.commandStats();
  const sum = (pick: (d: (typeof done)[number]) => number) => done.reduce((total, d) => total + pick(d), 0);
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
    scriptCalls: (stats.evalsha ?? 0) + (stats.eval ?? 0),
  };
}

describe.each(PLATFORMS)('%s: 8 Nest processes x 400 in flight on one subject, limit 100', (platform) => {
  it.each(RACE_ALGORITHMS.map((a) => [a]))('%s admits exactly 100', async (algorithm) => {
    const summary = await round(children, { type: 'go', platform, algorithm, subject: 'one-shared-subject' });
    (results[platform] ??= {})[algorithm] = summary;
    console.log(`race | nest on ${platform} | ${algorithm}: ${summary.admitted} admitted of ${summary.requests} (limit ${LIMIT}), ${summary.denied} x 429, ${summary.failed} failed, all in flight together for ${summary.inFlightTogetherMs} ms, ${summary.scriptCalls} script calls`);
    expect(summary.requests).toBe(PROCESSES * IN_FLIGHT);
    expect(summary.failed).toBe(0);
    expect(summary.together).toBe(true);
    expect(summary.admitted).toBe(LIMIT);
    expect(summary.denied).toBe(PROCESSES * IN_FLIGHT - LIMIT);
  }, 120_000);
});
