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
import { buildAgainst, buildChildren, OUT_DIR } from './build';
import { spawnChild, killAllChildren, type Child } from './children';
import { BENCH_DIR, REPO_DIR, loadAverage, machine } from './env';
import { floodGoalMisses, floodSection, recordRun, spliceFloodSection, summarizeBursts, summarizeOutage, type FloodScenario } from './flood-report';
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
  /** Burst kinds: a warm fleet on one subject, on a fresh subject per decision, and a fresh fleet (processes started just before) on one subject. */
  kinds: readonly FloodKind[];
  /** The outage run's autoscaler phase: processes started halfway through the outage, flooding at once (0: none). */
  joiners: number;
}

export const FLOOD_KINDS = ['one', 'fresh', 'fresh-fleet', 'callers'] as const;
/** The 'callers' bursts' limit per caller (issue 49's row: 400 callers x about 8 decisions, limit 5 each). */
export const CALLER_LIMIT = 5;
export type FloodKind = (typeof FLOOD_KINDS)[number];

export const FULL: FloodSettings = {
  processes: 8,
  inFlight: 400,
  limit: 100,
  repetitions: 3,
  algorithms: ALGORITHMS,
  topologies: FLOOD_TOPOLOGIES,
  outages: ['kill', 'pause'],
  outageMs: 10_000,
  kinds: FLOOD_KINDS,
  joiners: 4,
};
export const QUICK: FloodSettings = { ...FULL, repetitions: 1, algorithms: [DEFAULT_ALGORITHM], outages: ['pause'] };

/** The burst scenarios of a topology: one subject per algorithm, and a fresh subject per decision, each uncoalesced and default. */
export function floodScenarios(topology: FloodTopology, s: FloodSettings): FloodScenario[] {
  const out: FloodScenario[] = [];
  const base = { topology, processes: s.processes, inFlight: s.inFlight, limit: s.limit };
  for (const coalesce of ['off', 'default'] as const) {
    if (s.kinds.includes('one')) for (const algorithm of s.algorithms) out.push({ ...base, id: `${topology}/one/${coalesce}/${algorithm}`, subjects: 'one', coalesce, algorithm });
    if (s.kinds.includes('fresh')) out.push({ ...base, id: `${topology}/fresh/${coalesce}/${DEFAULT_ALGORITHM}`, subjects: 'fresh', coalesce, algorithm: DEFAULT_ALGORITHM });
  }
  // Issue 49's many-caller row: 400 callers shared by every process, limit 5 each, default options.
  if (s.kinds.includes('callers')) out.push({ ...base, limit: CALLER_LIMIT, id: `${topology}/callers/default/${DEFAULT_ALGORITHM}`, subjects: 'callers', coalesce: 'default', algorithm: DEFAULT_ALGORITHM });
  // The race of issue 49: one script per request, every process started just before the flood.
  if (s.kinds.includes('fresh-fleet')) {
    for (const algorithm of s.algorithms) out.push({ ...base, id: `${topology}/fresh-fleet/off/${algorithm}`, subjects: 'one', coalesce: 'off', fleet: 'fresh', algorithm });
  }
  return out;
}

type Worker = Child<FloodWorkerMessage>;

/** FLOOD_CPU_PROF=DIR: each flood process writes a CPU profile there when it exits (node --cpu-prof), to see where a flooded process spends its time. */
function profileArgs(): string[] {
  const dir = process.env.FLOOD_CPU_PROF;
  return dir ? ['--cpu-prof', '--cpu-prof-dir', dir] : [];
}

export async function expectAnswers(worker: Worker, timeoutMs: number): Promise<FloodAnswers> {
  const m = await worker.next(timeoutMs);
  if (m.type === 'answers') return m;
  throw new Error(`flood worker: ${m.type === 'error' ? m.message : `unexpected ${JSON.stringify(m)}`}`);
}

/** One checkout measured: this one (dist/), or another built by `--against` (dist-against/). */
export interface FloodSide {
  /** The label its run is recorded under. */
  label: string;
  /** Where its compiled flood-worker.js and Floodgate packages are. */
  dir: string;
  /** Its checkout, for the commit recorded with the run. */
  repoDir: string;
}

export async function startWorkers(count: number, setup: FloodWorkerSetup, name: string, dir: string): Promise<Worker[]> {
  const workers = await Promise.all(
    Array.from({ length: count }, (_, i) => spawnChild<FloodWorkerMessage>('flood-worker', [JSON.stringify(setup)], { name: `${name}-${i}`, timeoutMs: 60_000, dir, nodeArgs: profileArgs() })),
  );
  for (const w of workers) {
    if (w.first.type !== 'ready') {
      await Promise.all(workers.map((x) => x.stop()));
      throw new Error(`flood worker failed to start: ${w.first.type === 'error' ? w.first.message : JSON.stringify(w.first)}`);
    }
  }
  return workers;
}

/** Round `i`'s order of the sides: alternated, so drift in the machine's load falls on each alike. */
const inTurn = <T>(sides: readonly T[], i: number): T[] => (i % 2 === 0 ? [...sides] : [...sides].reverse());

/** Every script on every node before the floods, so that no burst pays for a NOSCRIPT and an EVAL. */
export async function loadScripts(servers: readonly RedisServer[]): Promise<void> {
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
export async function settle(servers: readonly RedisServer[]): Promise<void> {
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

/**
 * One burst by processes started for it (an autoscaler's new instances): on a prefix of its own,
 * so no process knows how many share the limit; each makes its limiter as the burst starts.
 */
async function freshFleetBurst(count: number, setup: FloodWorkerSetup, burst: FloodBurst, name: string, dir: string): Promise<FloodAnswers[]> {
  const fleet = await startWorkers(count, setup, name, dir);
  try {
    // Every process got its message by then; none has made its limiter before.
    const job = { ...burst, startAt: Date.now() + 200 };
    for (const w of fleet) w.send(job);
    return await Promise.all(fleet.map((w) => expectAnswers(w, 120_000)));
  } finally {
    await Promise.all(fleet.map((w) => w.stop()));
  }
}

const runId = Math.random().toString(36).slice(2, 8);
let prefixes = 0;
/** A key prefix of its own per burst (prefixes are at most 32 characters: the subject carries the description). */
const nextPrefix = () => `fgflood-${runId}-${prefixes++}`;

/** Every burst scenario of one topology, for each side (its own workers), sides alternating burst by burst. Rows by side. */
async function runBursts(topology: FloodTopology, s: FloodSettings, sides: readonly FloodSide[], progress: Progress): Promise<FloodScenarioRow[][]> {
  let redis: RedisServer | undefined;
  let cluster: RedisClusterHandle | undefined;
  const workers: Worker[][] = [];
  try {
    progress.step(`flood: starting ${topology === 'cluster' ? 'a 3-master Redis Cluster' : 'a redis-server'} and ${s.processes} processes per checkout`, 3_000);
    let setup: FloodWorkerSetup;
    if (topology === 'cluster') {
      cluster = await startRedisCluster({ masters: 3 });
      await loadScripts(cluster.nodes);
      setup = { cluster: cluster.startupNodes };
    } else {
      redis = await startRedis();
      await loadScripts([redis]);
      setup = { port: redis.port };
    }
    for (const [i, side] of sides.entries()) workers.push(await startWorkers(s.processes, setup, `flood-${topology}-${i}`, side.dir));
    const nodes = cluster ? cluster.nodes : [redis!];
    const rows: FloodScenarioRow[][] = sides.map(() => []);
    let round = 0;
    // One prefix per side for the whole topology, as an app keeps its own: each burst floods subjects
    // of its own (the subject names the burst), and the processes are a fleet that has been up a
    // while rather than one started for the burst (a fleet's first second is the documented worst
    // case: docs/failure-modes.md#the-bound-on-over-admission).
    const sidePrefixes = sides.map(() => nextPrefix());
    // A side's first burst makes its processes' limiters: their fleet announces itself at once, 250 ms
    // and 1 s later, so that burst starts 3 s on, when every process has counted the others.
    const fleetUp = new Set<number>();
    for (const scenario of floodScenarios(topology, s)) {
      const reps: FloodAnswers[][][] = sides.map(() => []);
      for (let rep = 0; rep < s.repetitions; rep++) {
        for (const i of inTurn([...sides.keys()], round++)) {
          const who = sides.length > 1 ? ` (${sides[i].label})` : '';
          progress.step(`flood: ${scenario.id}${who}, repetition ${rep + 1}/${s.repetitions}`, 2_500);
          await settle(nodes);
          const tag = `${runId}-${scenario.id.replace(/\//g, '-')}-${rep}-${i}`;
          const burst: FloodBurst = {
            type: 'burst',
            algorithm: scenario.algorithm,
            coalesce: scenario.coalesce,
            subjects: scenario.subjects,
            limit: scenario.limit,
            inFlight: scenario.inFlight,
            prefix: sidePrefixes[i],
            subject: `flood-${tag}`,
            // Every process starts its burst at the same moment, whenever the message reached it.
            startAt: Date.now() + (fleetUp.has(i) ? 500 : 3_000),
          };
          if (scenario.fleet === 'fresh') {
            reps[i].push(await freshFleetBurst(s.processes, setup, { ...burst, prefix: nextPrefix(), freshFleet: true }, `flood-${topology}-fresh-${i}`, sides[i].dir));
            continue;
          }
          fleetUp.add(i);
          for (const w of workers[i]) w.send(burst);
          reps[i].push(await Promise.all(workers[i].map((w) => expectAnswers(w, 120_000))));
        }
      }
      for (const [i, side] of sides.entries()) {
        const row = summarizeBursts(scenario, reps[i]);
        rows[i].push(row);
        progress.note(
          `flood: ${scenario.id}${sides.length > 1 ? ` (${side.label})` : ''}: most on one subject ${row.maxAdmittedPerSubject} of ${row.limit}, ${row.withoutStore} of ${row.decisions} without the store, p99 ${row.p99WaitMs} ms, longest ${row.maxWaitMs} ms, ${row.overAllowance} past the allowance`,
        );
      }
    }
    return rows;
  } finally {
    await Promise.all(workers.flat().map((w) => w.stop()));
    await redis?.stop();
    await cluster?.stop();
  }
}

/** The outage run's pacing: each process sends this many decisions every `FLOOD_EVERY_MS` while it floods. */
const FLOOD_PER_TICK = 20;
const FLOOD_EVERY_MS = 50;
const WARM_MS = 3_000;
const AFTER_MS = 3_000;

async function runOutage(fault: FloodOutageRow['fault'], s: FloodSettings, side: FloodSide, progress: Progress): Promise<FloodOutageRow> {
  const redis = await startRedis();
  let workers: Worker[] = [];
  try {
    await loadScripts([redis]);
    workers = await startWorkers(s.processes, { port: redis.port }, `flood-outage-${fault}`, side.dir);
    const tag = `${runId}-outage-${fault}-${prefixes}`;
    progress.step(`flood: outage (${fault}, ${side.label}): ${WARM_MS / 1000} s healthy, ${s.outageMs / 1000} s out, ${AFTER_MS / 1000} s after`, WARM_MS + s.outageMs + AFTER_MS);
    // One prefix for every process: one shared limit (and one fleet), as an app's instances have.
    const prefix = nextPrefix();
    for (const w of workers) w.send({ type: 'warm', limit: s.limit, prefix, everyMs: 100, perTick: 5 });
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
    let joiners: Worker[] = [];
    try {
      // The autoscaler's case: new instances start halfway through the outage (they never reached
      // Redis, so they know no count) and flood the same caller at once.
      if (s.joiners > 0) {
        await sleep(s.outageMs / 2 - (Date.now() - outageFrom));
        joiners = await startWorkers(s.joiners, { port: redis.port, lazy: true }, `flood-outage-${fault}-joined`, side.dir);
        workers = [...workers, ...joiners];
        for (const w of joiners) w.send({ type: 'join', limit: s.limit, prefix, subject: `flooder-${tag}`, everyMs: FLOOD_EVERY_MS, perTick: FLOOD_PER_TICK, maxInFlight: s.inFlight });
      }
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
      { fault, limit: s.limit, ratePerSecond: (s.processes * FLOOD_PER_TICK * 1000) / FLOOD_EVERY_MS, outageFrom, outageTo, stoppedAt: Date.now(), joined: joiners.length },
      answers,
    );
    progress.note(
      `flood: outage (${fault}, ${side.label}): ${row.admittedDuringOutage} admitted while Redis was out (limit ${row.limit}, bound ${row.bound}, ${row.joined ?? 0} processes joined halfway), ${row.admittedAfter} after; longest wait ${row.maxWaitMs} ms`,
    );
    return row;
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
    await redis.stop();
  }
}

/** Every scenario of the settings for every side, topology by topology, then the outages: one result per side. */
export async function runFlood(s: FloodSettings, sides: readonly FloodSide[], progress: Progress): Promise<Pick<FloodRun, 'scenarios' | 'outages'>[]> {
  const out: Pick<FloodRun, 'scenarios' | 'outages'>[] = sides.map(() => ({ scenarios: [], outages: [] }));
  for (const topology of s.topologies) {
    const rows = await runBursts(topology, s, sides, progress);
    rows.forEach((r, i) => out[i].scenarios.push(...r));
  }
  let round = 0;
  for (const fault of s.outages) {
    for (const i of inTurn([...sides.keys()], round++)) out[i].outages.push(await runOutage(fault, s, sides[i], progress));
  }
  return out;
}

/** The commit of a checkout, short, and whether its packages had uncommitted changes. */
export function checkout(repoDir = REPO_DIR): { commit: string; dirty: boolean } {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: repoDir, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'packages'], { cwd: repoDir, encoding: 'utf8' }).trim() !== '';
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

/** Re-renders only the Flood section of docs/benchmarks-details.md (the rest of the page is the last full run's). */
export function writeFloodSection(runs: readonly FloodRun[]): string {
  const page = join(REPO_DIR, 'docs', 'benchmarks-details.md');
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
  --kinds LIST       burst kinds: one (a fleet up a while, one subject), fresh (a fresh subject per decision),
                     fresh-fleet (processes started just before, one subject, coalesce false),
                     callers (400 callers shared by every process, limit ${CALLER_LIMIT} each) (default all)
  --joiners N        the outage's autoscaler phase: processes started halfway through it, flooding at once
                     (default ${FULL.joiners}; 0: none)
  --label NAME       record the run under this name in bench/flood-runs.json and on docs/benchmarks-details.md
                     (default: "commit <sha>"); a run of the same name is replaced
  --against DIR      also measure another checkout (e.g. a worktree of an older commit, after
                     pnpm install), burst by burst in alternation: two runs under the same load
  --against-label NAME  its run's name (default: "commit <its sha>")
  --no-docs          print only: record nothing, change no page
  --render           measure nothing: re-render the Flood section of docs/benchmarks-details.md from bench/flood-runs.json
  --help

Environment, to see why a wait is long (each flood process writes to its own log, in $TMPDIR/floodgate-bench-*/):
  FLOOD_TRACE=1        the first decisions past the allowance, with the loop's ticks meanwhile and the limiter's health
  FLOOD_CPU_PROF=DIR   a CPU profile per flood process in DIR (node --cpu-prof), and each burst's span on the
                       profile's clock in the log: \`node --import tsx src/flood-profile.ts DIR LOGDIR [off|default] [one|fresh]\`
                       prints where the CPU went during the bursts only`;

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

export function parseFloodArgs(
  argv: string[],
): { settings: FloodSettings; quick: boolean; label?: string; against?: string; againstLabel?: string; docs: boolean } | 'help' | 'render' {
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
      kinds: { type: 'string' },
      joiners: { type: 'string' },
      label: { type: 'string' },
      against: { type: 'string' },
      'against-label': { type: 'string' },
      'no-docs': { type: 'boolean', default: false },
      render: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (values.help) return 'help';
  if (values.render) return 'render';
  const quick = values.quick ?? false;
  const base = quick ? QUICK : FULL;
  return {
    quick,
    label: values.label,
    against: values.against,
    againstLabel: values['against-label'],
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
      kinds: listOf(values.kinds, FLOOD_KINDS, 'kinds') ?? base.kinds,
      joiners: values.joiners === '0' ? 0 : whole(values.joiners, base.joiners, 'joiners'),
    },
  };
}

/** This checkout, labelled `label` (default "commit <sha>"). */
export function thisSide(label?: string): FloodSide {
  return { label: label ?? `commit ${checkout().commit}`, dir: OUT_DIR, repoDir: REPO_DIR };
}

/** Another checkout (`--against DIR`), built with this bench's flood worker, labelled `label` (default "commit <sha>"). */
export async function againstSide(against: string, label?: string): Promise<FloodSide> {
  const { repoDir, outDir } = await buildAgainst(against, ['flood-worker']);
  return { label: label ?? `commit ${checkout(repoDir).commit}`, dir: outDir, repoDir };
}

/** Measures each side, alternating burst by burst; what `pnpm bench` runs as its flood section too. One run per side. */
export async function measureFlood(settings: FloodSettings, quick: boolean, command: string, sides: readonly FloodSide[], progress: Progress): Promise<FloodRun[]> {
  const started = Date.now();
  const loadAverageStart = loadAverage();
  const results = await runFlood(settings, sides, progress);
  const m = machine();
  const loadAverageEnd = loadAverage();
  return sides.map((side, i) => {
    const { scenarios, outages } = results[i];
    const { commit, dirty } = checkout(side.repoDir);
    const notes: string[] = [];
    if (quick) notes.push('Quick run: one repetition of each burst and the pause outage only; good for checking the harness and for a first reading.');
    if (sides.length > 1) notes.push(`Measured in one run with ${sides.filter((o) => o !== side).map((o) => `"${o.label}"`).join(', ')}, burst by burst in alternation, under the same load.`);
    const rejected = [...scenarios, ...outages].reduce((n, r) => n + r.rejected, 0);
    if (rejected) notes.push(`${rejected} consume() calls rejected instead of answering with a Decision.`);
    if ((loadAverageStart[0] ?? 0) > m.cores / 2) {
      notes.push(
        `The machine was busy (1-minute load average ${loadAverageStart[0]} at start on ${m.cores} cores): processes waited for a core, which shows as loop stall and as waits past the deadline; compare runs made under similar load.`,
      );
    }
    return {
      label: side.label,
      commit,
      dirty,
      date: new Date(started).toISOString(),
      command,
      mode: quick ? 'quick' : 'full',
      durationS: (Date.now() - started) / 1000,
      machine: `${m.cpu}, ${m.cores} cores, Node ${m.node}`,
      loadAverageStart,
      loadAverageEnd,
      scenarios,
      outages,
      notes,
    };
  });
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2).filter((a) => a !== '--');
  const parsed = parseFloodArgs(argv);
  if (parsed === 'help') {
    console.log(HELP);
    return 0;
  }
  if (parsed === 'render') {
    console.log(`bench:flood: wrote ${writeFloodSection(readFloodRuns())}`);
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
  const sides = [thisSide(parsed.label)];
  if (parsed.against) sides.unshift(await againstSide(parsed.against, parsed.againstLabel));
  if (new Set(sides.map((x) => x.label)).size < sides.length) throw new Error(`--label and --against-label must differ (both "${sides[0].label}")`);
  const command = ['pnpm bench:flood', ...argv].join(' ');
  const runs = await measureFlood(parsed.settings, parsed.quick, command, sides, progress);
  const took = Math.round(runs[0].durationS);
  if (parsed.docs) {
    let recorded = readFloodRuns();
    for (const run of runs) recorded = recordFloodRun(run);
    writeFloodSection(recorded);
    progress.finish(`bench:flood: done in ${took} s; recorded as ${runs.map((r) => `"${r.label}"`).join(' and ')} in bench/flood-runs.json and docs/benchmarks-details.md`);
  } else {
    progress.finish(`bench:flood: done in ${took} s (--no-docs: nothing recorded)`);
    console.log(floodSection(runs));
  }
  // Issue 49's goal, asserted: a row past it fails the run (after it is recorded, so the figures stay).
  const misses = runs.flatMap((run) => floodGoalMisses(run).map((m) => `${run.label}: ${m}`));
  for (const m of misses) console.error(`bench:flood: goal missed: ${m}`);
  return runs.some((run) => run.notes.some((n) => n.includes('rejected'))) || misses.length > 0 ? 1 : 0;
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
