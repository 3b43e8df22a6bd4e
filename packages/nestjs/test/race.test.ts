// The race through Nest: 8 processes, each a Nest app on one redis-server, 400 requests each in flight at once on one subject: every algorithm admits exactly its limit, on Express and on Fastify.
import { fork, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startRedis, whilePaused, type RedisServer } from '@floodgate/testing';
import { RACE_ALGORITHMS, type NestRaceGo, type NestRaceReply, type NestRaceSetup } from './race/nest-race-child';

const PROCESSES = 8;
const IN_FLIGHT = Number(process.env.FLOODGATE_RACE_IN_FLIGHT ?? 400); // per process, all at once
const LIMIT = 100;
const REPO = join(__dirname, '..', '..', '..');
const ARTIFACT = join(REPO, '.artifacts', 'nest-race-results.json');

type Done = Extract<NestRaceReply, { type: 'done' }>;

/** The next message of `type` from a child, or a failure naming the child. */
function next<T extends NestRaceReply['type']>(child: ChildProcess, type: T, timeoutMs: number): Promise<Extract<NestRaceReply, { type: T }>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => finish(new Error(`child ${child.pid}: no '${type}' within ${timeoutMs} ms`)), timeoutMs);
    const onMessage = (message: NestRaceReply) => {
      if (message.type === 'error') finish(new Error(`child ${child.pid}: ${message.message}`));
      else if (message.type === type) finish(undefined, message as Extract<NestRaceReply, { type: T }>);
    };
    const onExit = (code: number | null) => finish(new Error(`child ${child.pid} exited (${code}) before '${type}'`));
    function finish(error?: Error, message?: Extract<NestRaceReply, { type: T }>) {
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

let server: RedisServer;
const children: ChildProcess[] = [];
const results: Record<string, Record<string, unknown>> = {};

beforeAll(async () => {
  server = await startRedis();
}, 60_000);

afterAll(async () => {
  await stop(children.splice(0));
  await server?.stop();
  const report = { processes: PROCESSES, inFlightPerProcess: IN_FLIGHT, limit: LIMIT, platforms: results };
  console.log(`nest race results:\n${JSON.stringify(report, null, 2)}`);
  mkdirSync(join(REPO, '.artifacts'), { recursive: true });
  writeFileSync(ARTIFACT, `${JSON.stringify({ ...report, at: new Date().toISOString() }, null, 2)}\n`);
}, 60_000);

/** Forks the children: the TypeScript sources through SWC with Nest's decorators, workspace packages from their sources. */
async function start(platform: NestRaceSetup['platform'], prefix: string): Promise<ChildProcess[]> {
  const started = Array.from({ length: PROCESSES }, () =>
    fork(join(__dirname, 'race', 'nest-race-child.ts'), [], {
      cwd: REPO,
      execArgv: ['--conditions=source', '-r', join(__dirname, 'race', 'swc-register.js')],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    }),
  );
  children.push(...started);
  await Promise.all(
    started.map((child) => {
      const ready = next(child, 'ready', 120_000);
      child.send({ type: 'setup', platform, redisPort: server.port, prefix, limit: LIMIT, inFlight: IN_FLIGHT } satisfies NestRaceSetup);
      return ready;
    }),
  );
  return started;
}

async function stop(list: ChildProcess[]): Promise<void> {
  await Promise.all(
    list.map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
          child.once('exit', () => (clearTimeout(timer), resolve()));
          if (child.connected) child.send({ type: 'exit' });
          else child.kill('SIGKILL');
        }),
    ),
  );
}

/**
 * One round behind a start barrier: Redis is stopped (SIGSTOP) while every child fires its
 * requests, and runs again only when every request of every child has reached its guard, so all
 * of them are in flight together.
 */
async function round(list: ChildProcess[], go: NestRaceGo) {
  await server.resetStats();
  const replies = list.map((child) => ({ sent: next(child, 'sent', 120_000), done: next(child, 'done', 120_000) }));
  for (const r of replies) r.done.catch(() => undefined);
  await whilePaused(server, async () => {
    for (const child of list) child.send(go);
    await Promise.all(replies.map((r) => r.sent));
  });
  const done: Done[] = await Promise.all(replies.map((r) => r.done));
  const stats = await server.commandStats();
  const sum = (pick: (d: Done) => number) => done.reduce((total, d) => total + pick(d), 0);
  return {
    requests: sum((d) => d.sent),
    admitted: sum((d) => d.admitted),
    denied: sum((d) => d.denied),
    failed: sum((d) => d.failed),
    perProcess: done.map((d) => d.admitted),
    inFlightTogetherMs: Number((Math.min(...done.map((d) => d.firstReplyAt)) - Math.max(...done.map((d) => d.lastSentAt))).toFixed(2)),
    scriptCalls: (stats.evalsha ?? 0) + (stats.eval ?? 0),
  };
}

describe.each(['express', 'fastify'] as const)('%s: 8 Nest processes x 400 in flight on one subject, limit 100', (platform) => {
  let list: ChildProcess[];
  beforeAll(async () => {
    list = await start(platform, `nestrace-${platform}-${Math.random().toString(36).slice(2, 8)}`);
  }, 180_000);
  afterAll(async () => {
    await stop(list);
  }, 30_000);

  it.each(RACE_ALGORITHMS.map((a) => [a]))('%s admits exactly 100', async (algorithm) => {
    const summary = await round(list, { type: 'go', algorithm, subject: 'one-shared-subject' });
    (results[platform] ??= {})[algorithm] = summary;
    console.log(`race | nest on ${platform} | ${algorithm}: ${summary.admitted} admitted of ${summary.requests} (limit ${LIMIT}), ${summary.denied} x 429, ${summary.failed} failed, all in flight together for ${summary.inFlightTogetherMs} ms, ${summary.scriptCalls} script calls`);
    expect(summary.requests).toBe(PROCESSES * IN_FLIGHT);
    expect(summary.failed).toBe(0);
    expect(summary.inFlightTogetherMs).toBeGreaterThan(0);
    expect(summary.admitted).toBe(LIMIT);
    expect(summary.denied).toBe(PROCESSES * IN_FLIGHT - LIMIT);
  }, 120_000);
});
