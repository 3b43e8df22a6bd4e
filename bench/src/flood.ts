// The flood bench (issue #24): processes x decisions in flight on one Redis and on a 3-master Cluster, and a caller flooding through a Redis outage, all with default failure options.
//
//   pnpm bench:flood                    full: every algorithm on one subject, 3 repetitions, kill and pause
//   pnpm bench:flood --quick            about a minute: the default algorithm, 1 repetition, pause only
//   pnpm bench:flood --label before     records the run as 'before' in bench/flood-runs.json
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ALGORITHMS, type AlgorithmName } from '@floodgate/core';
import { SCRIPTS } from '@floodgate/core/internal';
import { sleep, startRedis, startRedisCluster, type RedisClusterHandle, type RedisServer } from '@floodgate/testing';
import { buildChildren } from './build';
import { spawnChild, killAllChildren, type Child } from './children';
import { BENCH_DIR, REPO_DIR, loadAverage, machine } from './env';
import { floodSection, recordRun, spliceFloodSection, summarizeBursts, summarizeOutage, type FloodScenario } from './flood-report';
import type { FloodAnswers, FloodBurst, FloodWorkerMessage, FloodWorkerSetup } from './flood-worker';
import { Progress } from './progress';
import { DEFAULT_ALGORITHM, FLOOD_TOPOLOGIES, type FloodOutageRow, type FloodRun, type FloodScenarioRow, type FloodTopology } from './types';

/** The recorded runs the page's Flood section shows (committed: the before / after figures live here). */
export const FLOOD_RUNS_FILE = join(BENCH_DIR, 'flood-runs.json');

export interface FloodSettings {
  processes: number;
  /** Decisions each process makes at once per burst. */
  inFlight: number;
  limit: number;
  repetitions: number;
  /** Algorithms of the one-subject scenarios; fresh-subject ones run the default algorithm. */
  algorithms: readonly AlgorithmName[];
  topologies: readonly FloodTopology[];
  outages: readonly FloodOutageRow['fault'][];
  outageMs: number;
}

export const FULL: FloodSettings = {
  processes: 8,
  inFlight: 400,
  limit: 100,
  repetitions: 3,
  algorithms: ALGORITHMS,
  topologies: FLOOD_TOPOLOGIES,
  outages: ['kill', 'pause'],
  outageMs: 10_000,
};
export const QUICK: FloodSettings = { ...FULL, repetitions: 1, algorithms: [DEFAULT_ALGORITHM], outages: ['pause'] };

/** The burst scenarios of a topology: one subject per algorithm, and a fresh subject per decision, each uncoalesced and default. */
export function floodScenarios(topology: FloodTopology, s: FloodSettings): FloodScenario[] {
  const out: FloodScenario[] = [];
  const base = { topology, processes: s.processes, inFlight: s.inFlight, limit: s.limit };
  for (const coalesce of ['off', 'default'] as const) {
    for (const algorithm of s.algorithms) out.push({ ...base, id: `${topology}/one/${coalesce}/${algorithm}`, subjects: 'one', coalesce, algorithm });
    out.push({ ...base, id: `${topology}/fresh/${coalesce}/${DEFAULT_ALGORITHM}`, subjects: 'fresh', coalesce, algorithm: DEFAULT_ALGORITHM });
  }
  return out;
}

type Worker = Child<FloodWorkerMessage>;

async function expectAnswers(worker: Worker, timeoutMs: number): Promise<FloodAnswers> {
  const m = await worker.next(timeoutMs);
  if (m.type === 'answers') return m;
  throw new Error(`flood worker: ${m.type === 'error' ? m.message : `unexpected ${JSON.stringify(m)}`}`);
}

async function startWorkers(count: number, setup: FloodWorkerSetup, name: string): Promise<Worker[]> {
  const workers = await Promise.all(
    Array.from({ length: count }, (_, i) => spawnChild<FloodWorkerMessage>('flood-worker', [JSON.stringify(setup)], { name: `${name}-${i}`, timeoutMs: 60_000 })),
  );
  for (const w of workers) {
    if (w.first.type !== 'ready') {
      await Promise.all(workers.map((x) => x.stop()));
      throw new Error(`flood worker failed to start: ${w.first.type === 'error' ? w.first.message : JSON.stringify(w.first)}`);
    }
  }
  return workers;
}

/** Every script on every node before the floods, so that no burst pays for a NOSCRIPT and an EVAL. */
async function loadScripts(servers: readonly RedisServer[]): Promise<void> {
  for (const server of servers) {
    const client = server.client();
    try {
      for (const { source } of Object.values(SCRIPTS)) await client.script('LOAD', source);
    } finally {
      client.disconnect();
    }
  }
}

/**
 * Waits (at most 5 s) until every node answers a PING within 5 ms: calls of the previous burst that
 * timed out may still be running in Redis, and the next burst must not start behind them.
 */
async function settle(servers: readonly RedisServer[]): Promise<void> {
  const clients = servers.map((s) => s.client());
  try {
    const until = Date.now() + 5_000;
    for (const client of clients) {
      while (Date.now() < until) {
        const from = performance.now();
        await client.ping();
        if (performance.now() - from < 5) break;
        await sleep(50);
      }
    }
  } finally {
    for (const c of clients) c.disconnect();
  }
}

const runId = Math.random().toString(36).slice(2, 8);
let prefixes = 0;
/** A key prefix of its own per burst (prefixes are at most 32 characters: the subject carries the description). */
const nextPrefix = () => `fgflood-${runId}-${prefixes++}`;

async function runBursts(topology: FloodTopology, s: FloodSettings, progress: Progress): Promise<FloodScenarioRow[]> {
  let redis: RedisServer | undefined;
  let cluster: RedisClusterHandle | undefined;
  let workers: Worker[] = [];
  try {
    progress.step(`flood: starting ${topology === 'cluster' ? 'a 3-master Redis Cluster' : 'a redis-server'} and ${s.processes} processes`, 3_000);
    if (topology === 'cluster') {
      cluster = await startRedisCluster({ masters: 3 });
      await loadScripts(cluster.nodes);
      workers = await startWorkers(s.processes, { cluster: cluster.startupNodes }, 'flood-cluster');
    } else {
      redis = await startRedis();
      await loadScripts([redis]);
      workers = await startWorkers(s.processes, { port: redis.port }, 'flood-single');
    }
    const nodes = cluster ? cluster.nodes : [redis!];
    const rows: FloodScenarioRow[] = [];
    for (const scenario of floodScenarios(topology, s)) {
      const reps: FloodAnswers[][] = [];
      for (let rep = 0; rep < s.repetitions; rep++) {
        progress.step(`flood: ${scenario.id}, repetition ${rep + 1}/${s.repetitions}`, 2_500);
        await settle(nodes);
        const tag = `${runId}-${scenario.id.replace(/\//g, '-')}-${rep}`;
        const burst: FloodBurst = {
          type: 'burst',
          algorithm: scenario.algorithm,
          coalesce: scenario.coalesce,
          subjects: scenario.subjects,
          limit: scenario.limit,
          inFlight: scenario.inFlight,
          prefix: nextPrefix(),
          subject: `flood-${tag}`,
          // Every process starts its burst at the same moment, whenever the message reached it.
          startAt: Date.now() + 500,
        };
        for (const w of workers) w.send(burst);
        reps.push(await Promise.all(workers.map((w) => expectAnswers(w, 120_000))));
      }
      const row = summarizeBursts(scenario, reps);
      rows.push(row);
      progress.note(
        `flood: ${scenario.id}: most on one subject ${row.maxAdmittedPerSubject} of ${row.limit}, ${row.withoutStore} of ${row.decisions} without the store, p99 ${row.p99WaitMs} ms, longest ${row.maxWaitMs} ms, ${row.overAllowance} past the allowance`,
      );
    }
    return rows;
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
    await redis?.stop();
    await cluster?.stop();
  }
}

/** The outage run's pacing: each process sends this many decisions every `FLOOD_EVERY_MS` while it floods. */
const FLOOD_PER_TICK = 20;
const FLOOD_EVERY_MS = 50;
const WARM_MS = 3_000;
const AFTER_MS = 3_000;

async function runOutage(fault: FloodOutageRow['fault'], s: FloodSettings, progress: Progress): Promise<FloodOutageRow> {
  const redis = await startRedis();
  let workers: Worker[] = [];
  try {
    await loadScripts([redis]);
    workers = await startWorkers(s.processes, { port: redis.port }, `flood-outage-${fault}`);
    const tag = `${runId}-outage-${fault}`;
    progress.step(`flood: outage (${fault}): ${WARM_MS / 1000} s healthy, ${s.outageMs / 1000} s out, ${AFTER_MS / 1000} s after`, WARM_MS + s.outageMs + AFTER_MS);
    for (const w of workers) w.send({ type: 'warm', limit: s.limit, prefix: nextPrefix(), everyMs: 100, perTick: 5 });
    for (const w of workers) {
      const m = await w.next(30_000);
      if (m.type !== 'warmed') throw new Error(`flood worker: ${m.type === 'error' ? m.message : JSON.stringify(m)}`);
    }
    await sleep(WARM_MS);
    const outageFrom = Date.now();
    if (fault === 'kill') await redis.kill();
    else redis.pause();
    // The attacker's moment: the flood starts as the store goes.
    for (const w of workers) w.send({ type: 'flood', subject: `flooder-${tag}`, everyMs: FLOOD_EVERY_MS, perTick: FLOOD_PER_TICK, maxInFlight: s.inFlight });
    try {
      await sleep(s.outageMs - (Date.now() - outageFrom));
    } finally {
      if (fault === 'kill') await redis.restart();
      else redis.resume();
    }
    const outageTo = Date.now();
    await sleep(AFTER_MS);
    for (const w of workers) w.send({ type: 'stop' });
    const answers = await Promise.all(workers.map((w) => expectAnswers(w, 60_000)));
    const row = summarizeOutage(
      { fault, limit: s.limit, ratePerSecond: (s.processes * FLOOD_PER_TICK * 1000) / FLOOD_EVERY_MS, outageFrom, outageTo, stoppedAt: Date.now() },
      answers,
    );
    progress.note(`flood: outage (${fault}): ${row.admittedDuringOutage} admitted while Redis was out (limit ${row.limit}, bound ${row.bound}), ${row.admittedAfter} after; longest wait ${row.maxWaitMs} ms`);
    return row;
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
    await redis.stop();
  }
}

/** Every scenario of the settings, topology by topology, then the outages. */
export async function runFlood(s: FloodSettings, progress: Progress): Promise<Pick<FloodRun, 'scenarios' | 'outages'>> {
  const scenarios: FloodScenarioRow[] = [];
  for (const topology of s.topologies) scenarios.push(...(await runBursts(topology, s, progress)));
  const outages: FloodOutageRow[] = [];
  for (const fault of s.outages) outages.push(await runOutage(fault, s, progress));
  return { scenarios, outages };
}

/** The commit measured, short, and whether the packages had uncommitted changes. */
export function checkout(): { commit: string; dirty: boolean } {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: REPO_DIR, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'packages'], { cwd: REPO_DIR, encoding: 'utf8' }).trim() !== '';
    return { commit, dirty };
  } catch {
    return { commit: '?', dirty: false };
  }
}

export function readFloodRuns(file = FLOOD_RUNS_FILE): FloodRun[] {
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as FloodRun[]) : [];
}

/** Records the run under its label in bench/flood-runs.json; returns every recorded run. */
export function recordFloodRun(run: FloodRun): FloodRun[] {
  const runs = recordRun(readFloodRuns(), run);
  writeFileSync(FLOOD_RUNS_FILE, `${JSON.stringify(runs, null, 2)}\n`);
  return runs;
}

/** Re-renders only the Flood section of docs/benchmarks.md (the rest of the page is the last full run's). */
export function writeFloodSection(runs: readonly FloodRun[]): string {
  const page = join(REPO_DIR, 'docs', 'benchmarks.md');
  writeFileSync(page, spliceFloodSection(existsSync(page) ? readFileSync(page, 'utf8') : '# Benchmarks\n', floodSection(runs)));
  return page;
}

const HELP = `Usage: pnpm bench:flood [options]

  --quick            about a minute: ${QUICK.algorithms.join(',')} only, 1 repetition, the pause outage only
  --processes N      processes flooding at once (default ${FULL.processes})
  --in-flight M      decisions each process makes at once (default ${FULL.inFlight})
  --limit N          the one subject's limit (default ${FULL.limit})
  --repetitions N    bursts per scenario, a fresh subject each (default ${FULL.repetitions}; --quick 1)
  --algorithms LIST  one-subject scenarios' algorithms (default all; --quick ${DEFAULT_ALGORITHM})
  --topologies LIST  single,cluster (default both)
  --outages LIST     kill,pause or none (default both; --quick pause)
  --outage-ms MS     how long Redis is out (default ${FULL.outageMs})
  --label NAME       record the run under this name in bench/flood-runs.json and on docs/benchmarks.md
                     (default: "commit <sha>"); a run of the same name is replaced
  --no-docs          print only: record nothing, change no page
  --help`;

function listOf<T extends string>(value: string | undefined, allowed: readonly T[], option: string): T[] | undefined {
  if (value === undefined) return undefined;
  if (value === 'none') return [];
  const items = value.split(',').map((x) => x.trim()).filter(Boolean);
  for (const item of items) if (!allowed.includes(item as T)) throw new Error(`--${option}: "${item}" is not one of ${allowed.join(', ')}`);
  return items as T[];
}
function whole(value: string | undefined, fallback: number, option: string): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${option}: a whole number from 1, got "${value}"`);
  return n;
}

export function parseFloodArgs(argv: string[]): { settings: FloodSettings; quick: boolean; label?: string; docs: boolean } | 'help' {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean', default: false },
      processes: { type: 'string' },
      'in-flight': { type: 'string' },
      limit: { type: 'string' },
      repetitions: { type: 'string' },
      algorithms: { type: 'string' },
      topologies: { type: 'string' },
      outages: { type: 'string' },
      'outage-ms': { type: 'string' },
      label: { type: 'string' },
      'no-docs': { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (values.help) return 'help';
  const quick = values.quick ?? false;
  const base = quick ? QUICK : FULL;
  return {
    quick,
    label: values.label,
    docs: !values['no-docs'],
    settings: {
      processes: whole(values.processes, base.processes, 'processes'),
      inFlight: whole(values['in-flight'], base.inFlight, 'in-flight'),
      limit: whole(values.limit, base.limit, 'limit'),
      repetitions: whole(values.repetitions, base.repetitions, 'repetitions'),
      algorithms: listOf(values.algorithms, ALGORITHMS, 'algorithms') ?? base.algorithms,
      topologies: listOf(values.topologies, FLOOD_TOPOLOGIES, 'topologies') ?? base.topologies,
      outages: listOf(values.outages, ['kill', 'pause'] as const, 'outages') ?? base.outages,
      outageMs: whole(values['outage-ms'], base.outageMs, 'outage-ms'),
    },
  };
}

/** Measures this checkout; what `pnpm bench` runs as its flood section too. */
export async function measureFlood(settings: FloodSettings, quick: boolean, command: string, label: string | undefined, progress: Progress): Promise<FloodRun> {
  const started = Date.now();
  const loadAverageStart = loadAverage();
  const { commit, dirty } = checkout();
  const { scenarios, outages } = await runFlood(settings, progress);
  const notes: string[] = [];
  if (quick) notes.push('Quick run: one repetition of each burst and the pause outage only; good for checking the harness and for a first reading.');
  const rejected = [...scenarios, ...outages].reduce((n, r) => n + r.rejected, 0);
  if (rejected) notes.push(`${rejected} consume() calls rejected instead of answering with a Decision.`);
  const m0 = machine();
  if ((loadAverageStart[0] ?? 0) > m0.cores / 2) {
    notes.push(
      `The machine was busy (1-minute load average ${loadAverageStart[0]} at start on ${m0.cores} cores): processes waited for a core, which shows as loop stall and as waits past the deadline; compare runs made under similar load.`,
    );
  }
  return {
    label: label ?? `commit ${commit}`,
    commit,
    dirty,
    date: new Date(started).toISOString(),
    command,
    mode: quick ? 'quick' : 'full',
    durationS: (Date.now() - started) / 1000,
    machine: `${m0.cpu}, ${m0.cores} cores, Node ${m0.node}`,
    loadAverageStart,
    loadAverageEnd: loadAverage(),
    scenarios,
    outages,
    notes,
  };
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2).filter((a) => a !== '--');
  const parsed = parseFloodArgs(argv);
  if (parsed === 'help') {
    console.log(HELP);
    return 0;
  }
  const progress = new Progress(60_000);
  const interrupt = () => {
    progress.finish('bench:flood: interrupted');
    killAllChildren();
    process.exit(130);
  };
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  progress.step('building the flood worker and Floodgate (esbuild, as a release build)');
  await buildChildren({ children: ['flood-worker'] });
  const command = ['pnpm bench:flood', ...argv].join(' ');
  const run = await measureFlood(parsed.settings, parsed.quick, command, parsed.label, progress);
  if (parsed.docs) {
    writeFloodSection(recordFloodRun(run));
    progress.finish(`bench:flood: done in ${Math.round(run.durationS)} s; recorded as "${run.label}" in bench/flood-runs.json and docs/benchmarks.md`);
  } else {
    progress.finish(`bench:flood: done in ${Math.round(run.durationS)} s (--no-docs: nothing recorded)`);
    console.log(floodSection([run]));
  }
  return run.notes.some((n) => n.includes('rejected')) ? 1 : 0;
}

if (require.main === module) {
  main().then(
    (code) => process.exit(code),
    (error: Error) => {
      killAllChildren();
      console.error(`\nbench:flood failed: ${error.stack ?? error.message}`);
      process.exit(1);
    },
  );
}
