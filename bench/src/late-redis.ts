// The late-Redis bench (issue #49): a flood on one subject against a real redis-server whose every reply a loopback proxy holds for D ms, per store deadline: what a longer timeoutMs buys in exactness and costs in waiting.
//
//   pnpm bench:late-redis                                        delays 50,150,300 ms x deadlines 100,200,400,1000 ms
//   pnpm bench:late-redis --delays 150 --deadlines 100,200 --no-docs
//   pnpm bench:late-redis --render                               measures nothing: the recorded run's section written again
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ALGORITHMS, type AlgorithmName } from '@floodgate/core';
import { startDelayProxy, startRedis, type RedisServer } from '@floodgate/testing';
import { buildChildren, OUT_DIR } from './build';
import { killAllChildren } from './children';
import { BENCH_DIR, REPO_DIR, loadAverage, machine } from './env';
import { checkout, expectAnswers, loadScripts, settle, startWorkers } from './flood';
import { percentile } from './flood-report';
import type { FloodAnswers, FloodBurst } from './flood-worker';
import { Progress } from './progress';
import { sum } from './stats';
import { DEFAULT_ALGORITHM } from './types';

export const LATE_REDIS_FILE = join(BENCH_DIR, 'late-redis-runs.json');

export interface LateSettings {
  delaysMs: readonly number[];
  deadlinesMs: readonly number[];
  processes: number;
  inFlight: number;
  limit: number;
  repetitions: number;
  algorithm: AlgorithmName;
}

/** One cell: every repetition's bursts at one delay and one deadline. */
export interface LateRow {
  delayMs: number;
  deadlineMs: number;
  /** Admitted on the subject, per repetition (one burst each; exact = the limit). */
  admitted: number[];
  decisions: number;
  /** Decisions the store did not make (degraded, or answered from the block cache). */
  local: number;
  byReason: Record<string, number>;
  p50WaitMs: number;
  p99WaitMs: number;
  maxWaitMs: number;
  rejected: number;
}

export interface LateRun {
  date: string;
  commit: string;
  dirty: boolean;
  command: string;
  machine: string;
  loadAverageStart: number[];
  loadAverageEnd: number[];
  settings: LateSettings;
  rows: LateRow[];
}

export function lateRow(delayMs: number, deadlineMs: number, reps: readonly (readonly FloodAnswers[])[]): LateRow {
  const all = reps.flat();
  const byReason: Record<string, number> = {};
  const waits: number[] = [];
  for (const a of all) {
    for (const [k, n] of Object.entries(a.byReason)) byReason[k] = (byReason[k] ?? 0) + n;
    for (const w of a.waitsMs) waits.push(w);
  }
  return {
    delayMs,
    deadlineMs,
    admitted: reps.map((rep) => sum(rep.map((a) => sum(Object.values(a.admittedBySubject))))),
    decisions: sum(all.map((a) => a.decisions)),
    local: sum(all.map((a) => a.degraded)) + (byReason.blocked ?? 0),
    byReason,
    p50WaitMs: percentile(waits, 0.5),
    p99WaitMs: percentile(waits, 0.99),
    maxWaitMs: waits.reduce((m, w) => Math.max(m, w), 0),
    rejected: sum(all.map((a) => a.rejected)),
  };
}

const runId = Math.random().toString(36).slice(2, 8);

/** Every deadline at one delay: one proxy, one fleet of processes behind it (a fleet up a while: one prefix for the delay). */
async function runDelay(redis: RedisServer, delayMs: number, s: LateSettings, progress: Progress): Promise<LateRow[]> {
  const proxy = await startDelayProxy({ targetPort: redis.port, delayMs });
  const workers = await startWorkers(s.processes, { port: proxy.port }, `late-${delayMs}`, OUT_DIR);
  try {
    const prefix = `fglate-${runId}-${delayMs}`;
    const rows: LateRow[] = [];
    for (const deadlineMs of s.deadlinesMs) {
      const reps: FloodAnswers[][] = [];
      for (let rep = 0; rep < s.repetitions; rep++) {
        progress.step(`late-redis: delay ${delayMs} ms, deadline ${deadlineMs} ms, repetition ${rep + 1}/${s.repetitions}`, 4_000);
        await settle([redis]);
        const burst: FloodBurst = {
          type: 'burst',
          algorithm: s.algorithm,
          coalesce: 'default',
          subjects: 'one',
          limit: s.limit,
          inFlight: s.inFlight,
          prefix,
          subject: `late-${runId}-${delayMs}-${deadlineMs}-${rep}`,
          // 3 s: the fleet's announcements (at once, 250 ms and 1 s on) have come back through the proxy.
          startAt: Date.now() + 3_000,
          timeoutMs: deadlineMs,
        };
        for (const w of workers) w.send(burst);
        reps.push(await Promise.all(workers.map((w) => expectAnswers(w, 120_000))));
      }
      const row = lateRow(delayMs, deadlineMs, reps);
      rows.push(row);
      progress.note(`late-redis: delay ${delayMs} ms, deadline ${deadlineMs} ms: admitted ${row.admitted.join(', ')} of ${s.limit}, ${row.local} of ${row.decisions} local, p50 ${row.p50WaitMs} ms, p99 ${row.p99WaitMs} ms`);
    }
    return rows;
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
    await proxy.stop();
  }
}

const pct = (n: number, of: number) => (of === 0 ? '-' : `${((100 * n) / of).toFixed(n === 0 || n === of ? 0 : 1)}%`);

/** The table: one row per delay and deadline. */
export function lateTable(run: LateRun): string {
  const lines = [
    `| Redis answers after | timeoutMs | admitted per burst (exact: ${run.settings.limit}) | decided locally | p50 wait | p99 wait |`,
    '| ---: | ---: | --- | ---: | ---: | ---: |',
  ];
  for (const r of run.rows) {
    lines.push(`| ${r.delayMs} ms | ${r.deadlineMs} | ${r.admitted.join(', ')} | ${pct(r.local, r.decisions)} | ${r.p50WaitMs} ms | ${r.p99WaitMs} ms |`);
  }
  return lines.join('\n');
}

/** The page's section for the run (between markers, so a new run replaces it). */
export function lateSection(run: LateRun): string {
  const s = run.settings;
  return [
    '<!-- late-redis:start -->',
    '## A store that answers late (issue #49)',
    '',
    `\`${run.command}\` on ${run.date.slice(0, 10)}, commit ${run.commit}${run.dirty ? ' (uncommitted changes)' : ''}; ${run.machine}; load average ${run.loadAverageStart.join(' ')} at start, ${run.loadAverageEnd.join(' ')} at end.`,
    `${s.processes} processes x ${s.inFlight} decisions at once on one subject, ${s.algorithm}, limit ${s.limit}, RedisStore defaults but \`timeoutMs\`, ${s.repetitions} burst(s) per cell, a fleet up a while.`,
    'A loopback proxy (`startDelayProxy`, @floodgate/testing) holds each reply of a real redis-server for the delay. Waits are for the record, not asserted. What it means: [docs/failure-modes.md](failure-modes.md#a-store-that-answers-late-what-a-longer-deadline-buys). Recorded in `bench/late-redis-runs.json`.',
    '',
    lateTable(run),
    '<!-- late-redis:end -->',
  ].join('\n');
}

export function spliceLateSection(page: string, section: string): string {
  const from = page.indexOf('<!-- late-redis:start -->');
  const to = page.indexOf('<!-- late-redis:end -->');
  if (from >= 0 && to > from) return page.slice(0, from) + section + page.slice(to + '<!-- late-redis:end -->'.length);
  return `${page.trimEnd()}\n\n${section}\n`;
}

function numbers(value: string | undefined, fallback: readonly number[], option: string): number[] {
  if (value === undefined) return [...fallback];
  const out = value.split(',').map((x) => Number(x.trim()));
  for (const n of out) if (!Number.isInteger(n) || n < 0 || n > 60_000) throw new Error(`--${option}: whole numbers of ms from 0 to 60000, got "${value}"`);
  return out;
}

/** The page flood runs go to: docs/benchmarks-details.md where the results page has been split, else docs/benchmarks.md. */
export function benchPage(repoDir = REPO_DIR): string {
  const details = join(repoDir, 'docs', 'benchmarks-details.md');
  return existsSync(details) ? details : join(repoDir, 'docs', 'benchmarks.md');
}

/** Writes the run's section into the benchmarks page (replacing the previous one); returns the page. */
export function writeLateSection(run: LateRun): string {
  const page = benchPage();
  writeFileSync(page, spliceLateSection(existsSync(page) ? readFileSync(page, 'utf8') : '# Benchmarks\n', lateSection(run)));
  return page;
}

export function parseLateArgs(argv: string[]): { settings: LateSettings; docs: boolean; render: boolean } {
  const { values } = parseArgs({
    args: argv,
    options: {
      delays: { type: 'string' },
      deadlines: { type: 'string' },
      processes: { type: 'string' },
      'in-flight': { type: 'string' },
      limit: { type: 'string' },
      repetitions: { type: 'string' },
      algorithm: { type: 'string' },
      'no-docs': { type: 'boolean', default: false },
      render: { type: 'boolean', default: false },
    },
    strict: true,
  });
  const one = (v: string | undefined, d: number, o: string) => numbers(v, [d], o)[0] || d;
  const algorithm = (values.algorithm ?? DEFAULT_ALGORITHM) as AlgorithmName;
  if (!ALGORITHMS.includes(algorithm)) throw new Error(`--algorithm: "${algorithm}" is not one of ${ALGORITHMS.join(', ')}`);
  return {
    docs: !values['no-docs'],
    render: values.render ?? false,
    settings: {
      delaysMs: numbers(values.delays, [50, 150, 300], 'delays'),
      deadlinesMs: numbers(values.deadlines, [100, 200, 400, 1000], 'deadlines').map((d) => Math.max(1, d)),
      processes: one(values.processes, 8, 'processes'),
      inFlight: one(values['in-flight'], 400, 'in-flight'),
      limit: one(values.limit, 100, 'limit'),
      repetitions: one(values.repetitions, 2, 'repetitions'),
      algorithm,
    },
  };
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2).filter((a) => a !== '--');
  const { settings, docs, render } = parseLateArgs(argv);
  if (render) {
    // Measures nothing: the recorded run's section, written again (after a merge took another version of the page).
    console.log(`late-redis: wrote ${writeLateSection(JSON.parse(readFileSync(LATE_REDIS_FILE, 'utf8')) as LateRun)}`);
    return 0;
  }
  const progress = new Progress(60_000);
  process.once('SIGINT', () => (killAllChildren(), process.exit(130)));
  progress.step('building the flood worker and Floodgate (esbuild, as a release build)');
  await buildChildren({ children: ['flood-worker'] });
  const started = new Date().toISOString();
  const loadAverageStart = loadAverage();
  const redis = await startRedis();
  const rows: LateRow[] = [];
  try {
    await loadScripts([redis]);
    for (const delayMs of settings.delaysMs) rows.push(...(await runDelay(redis, delayMs, settings, progress)));
  } finally {
    await redis.stop();
  }
  const m = machine();
  const { commit, dirty } = checkout(REPO_DIR);
  const run: LateRun = { date: started, commit, dirty, command: ['pnpm bench:late-redis', ...argv].join(' '), machine: `${m.cpu}, ${m.cores} cores, Node ${m.node}`, loadAverageStart, loadAverageEnd: loadAverage(), settings, rows };
  progress.finish('late-redis: done');
  console.log(lateTable(run));
  if (docs) {
    writeFileSync(LATE_REDIS_FILE, `${JSON.stringify(run, null, 2)}\n`);
    console.log(`late-redis: recorded in ${LATE_REDIS_FILE} and ${writeLateSection(run)}`);
  }
  return rows.some((r) => r.rejected > 0) ? 1 : 0;
}

if (require.main === module) {
  main().then(
    (code) => process.exit(code),
    (error: Error) => {
      killAllChildren();
      console.error(`\nbench:late-redis failed: ${error.stack ?? error.message}`);
      process.exit(1);
    },
  );
}
