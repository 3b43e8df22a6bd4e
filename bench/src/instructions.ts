// `pnpm bench:instructions`: every contender under callgrind, instructions per request over the bare route: the bench's verdict (issue #44).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { buildChildren } from './build';
import { killAllChildren } from './children';
import { BENCH_DIR, REPO_DIR, machine } from './env';
import { haveValgrind } from './instructions-callgrind';
import { compareTable, mergeResults, renderInstructions } from './instructions-report';
import { killCountedRedis, planJobs, runInstructions, takeRows, type InstrSettings } from './instructions-run';
import { INSTR_LOADS, type InstrResults, type InstrRow } from './instructions-types';
import { frameworkInfo } from './frameworks';
import { procCpuUs } from './proc-cpu';
import { FRAMEWORKS, REGIMES } from './types';

const HELP = `Usage: pnpm bench:instructions [options]

Runs each contender's server under valgrind's callgrind (node --single-threaded
--predictable-gc-schedule --no-memory-reducer), sends a warm-up,
zeroes the counters, sends the counted requests with autocannon from outside valgrind, dumps and
divides, leaving out what V8's compilers spent (JIT warm-up) and its major GC cycles (when one falls in
a window is the run's history), both reported apart; redis-server runs
under callgrind too. Needs valgrind (apt-get install valgrind).

  --frameworks LIST   ${FRAMEWORKS.join(',')} (default: all)
  --loads LIST        ${INSTR_LOADS.join(',')} (default: both): one subject; 10,000 callers in
                      X-Forwarded-For (the servers trust the loopback proxy)
  --regimes LIST      admit,reject (default: both)
  --contenders LIST   ids' middle parts, e.g. floodgate-memory,floodgate-redis-sliding-window-counter,
                      fastify-rate-limit-memory,fastify-rate-limit,redis-floor-turn (default: all;
                      the bare route, 'none', is always measured)
  --peers WHICH       all (default), best (each framework's cheapest peer a store, as issue #44
                      measured them: Express's rate-limiter-flexible, the one peer elsewhere),
                      or peer libraries, e.g. rate-limiter-flexible,koa-ratelimit
  --requests N        counted requests per contender (default 6000)
  --warmup N          requests before counting, instrumentation off (default 20000)
  --settle N          requests after instrumentation is on, before the counters are zeroed
                      (default 3000: the first ones after the switch cost several times more)
  --connections N     autocannon connections (default 1: one request per event-loop turn. With
                      more, how many requests share a turn depends on how busy the machine is,
                      and so does the count: two runs then agree only on a quiet machine)
  --callers N         callers of the callers load (default 10000)
  --parallel N        contenders measured at once, each with its own redis-server (default 2)
  --label NAME        the run's name (default: the commit); the page's block of that name is
                      replaced (docs/benchmarks.md, between <!-- bench:instructions NAME --> markers)
  --keep-dumps DIR    leave callgrind's dump files in DIR (named <pid>.<n>; read them with
                      callgrind_annotate --inclusive=yes) instead of removing them
  --resume FILES      results files of a stopped run of this same code (same settings): their
                      rows are kept, only the missing contenders measured
  --reuse FILES       results files of other commits' runs (same settings): their peers' and
                      floors' rows are taken (each over its own run's bare route: no Floodgate code
                      runs in them), the bare route and Floodgate's rows measured. Halves an
                      after-run; the summary says which rows came from where
  --taken-only        measure nothing: the rows --resume and --reuse give, as one run (rows neither
                      has are left out and the run marked partial), e.g. a Floodgate-only run of
                      this code (--resume) with the peers and floors of another run (--reuse)
  --no-docs           write bench/results/instructions-*.json and print the tables only
  --render FILES      measure nothing: print (and with --label, splice) a results file's tables;
                      several files (each its own frameworks and loads) as one block
  --compare A,B       measure nothing: two results files row by row, and the largest difference
  --help`;

function list<T extends string>(value: string | undefined, allowed: readonly T[], option: string): T[] | undefined {
  if (value === undefined) return undefined;
  const items = value.split(',').map((s) => s.trim()).filter(Boolean);
  for (const item of items) if (!allowed.includes(item as T)) throw new Error(`--${option}: "${item}" is not one of ${allowed.join(', ')}`);
  return items as T[];
}

function count(value: string | undefined, fallback: number, option: string): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`--${option}: expected a positive whole number, got "${value}"`);
  return n;
}

/** `--peers`: all, best, or a list of peer libraries (limiter kinds). */
export function peersOption(value: string | undefined): InstrSettings['peers'] {
  if (value === undefined || value === 'all') return 'all';
  if (value === 'best') return 'best';
  const known = new Set(FRAMEWORKS.flatMap((f) => frameworkInfo(f).peers.map((p) => p.kind as string)));
  const items = value.split(',').map((s) => s.trim()).filter(Boolean);
  for (const item of items) if (!known.has(item)) throw new Error(`--peers: "${item}" is not all, best or one of ${[...known].join(', ')}`);
  return items;
}

/** The last commit that changed Floodgate's code (packages/), '+dirty' when packages/ has uncommitted changes: what a run measured, whatever the bench's own commits since. */
const codeCommit = () => {
  try {
    const last = execFileSync('git', ['log', '-1', '--format=%h', '--', 'packages'], { cwd: REPO_DIR, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'packages'], { cwd: REPO_DIR, encoding: 'utf8' }).trim() !== '';
    return `${last}${dirty ? '+dirty' : ''}`;
  } catch {
    return undefined;
  }
};

const commit = () => {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: REPO_DIR, encoding: 'utf8' }).trim();
  } catch {
    return '?';
  }
};

/** A results file, its path relative to where pnpm was called (INIT_CWD), not to bench/ where the script runs. */
const readResults = (file: string) => JSON.parse(readFileSync(resolve(process.env.INIT_CWD ?? process.cwd(), file), 'utf8')) as InstrResults;

/** Replaces (or appends) the page's block of this label, between its markers. */
export function spliceBlock(page: string, label: string, body: string): string {
  const [open, close] = [`<!-- bench:instructions ${label} -->`, `<!-- /bench:instructions ${label} -->`];
  const block = `${open}\n${body}\n${close}`;
  const start = page.indexOf(open);
  const end = page.indexOf(close);
  if (start >= 0 && end > start) return page.slice(0, start) + block + page.slice(end + close.length);
  return `${page.trimEnd()}\n\n${block}\n`;
}

function writePage(results: InstrResults): string {
  const file = join(REPO_DIR, 'docs', 'benchmarks.md');
  const page = existsSync(file) ? readFileSync(file, 'utf8') : '# Benchmarks\n';
  writeFileSync(file, spliceBlock(page, results.label, renderInstructions(results)));
  return file;
}

async function measureAll(values: Record<string, string | boolean | undefined>): Promise<InstrResults> {
  if (!(await haveValgrind())) throw new Error('valgrind and callgrind_control must be on the PATH (Debian/Ubuntu: apt-get install valgrind)');
  const settings: InstrSettings = {
    frameworks: list(values.frameworks as string | undefined, FRAMEWORKS, 'frameworks') ?? [...FRAMEWORKS],
    loads: list(values.loads as string | undefined, INSTR_LOADS, 'loads') ?? [...INSTR_LOADS],
    regimes: list(values.regimes as string | undefined, REGIMES, 'regimes') ?? [...REGIMES],
    peers: peersOption(values.peers as string | undefined),
    contenders: ((values.contenders as string | undefined) ?? '').split(',').map((s) => s.trim()).filter(Boolean),
    requests: count(values.requests as string | undefined, 6000, 'requests'),
    warmup: count(values.warmup as string | undefined, 20_000, 'warmup'),
    settle: count(values.settle as string | undefined, 3000, 'settle'),
    connections: count(values.connections as string | undefined, 1, 'connections'),
    callers: count(values.callers as string | undefined, 10_000, 'callers'),
    parallel: count(values.parallel as string | undefined, 2, 'parallel'),
    outDir: join(BENCH_DIR, `dist-instructions-${process.pid}`),
    ...(values['keep-dumps'] ? { keepDir: resolve(values['keep-dumps'] as string) } : {}),
    log: (line) => console.error(line),
  };
  const jobs = planJobs(settings);
  console.error(`bench:instructions: ${jobs.length} contenders, ${settings.parallel} at a time; building`);
  await buildChildren({ children: ['server'], outDir: settings.outDir });
  const started = Date.now();
  const coreBefore = procCpuUs(process.pid);
  const m = machine();
  const label = (values.label as string | undefined) ?? commit();
  const date = new Date().toISOString();
  // The commit measured is the one checked out at the start (a results file is rewritten during the run).
  const measuredCommit = commit();
  const code = codeCommit();
  const results = (rows: InstrRow[], partial: boolean): InstrResults => ({
    kind: 'instructions',
    label,
    date,
    commit: measuredCommit,
    ...(code ? { codeCommit: code } : {}),
    command: `pnpm bench:instructions ${process.argv.slice(2).filter((a) => a !== '--').join(' ')}`.trim(),
    machine: `${m.cpu}, ${m.cores} cores, Node ${m.node}`,
    settings: { requests: settings.requests, warmup: settings.warmup, settle: settings.settle, connections: settings.connections, callers: settings.callers, parallel: settings.parallel },
    durationS: (Date.now() - started) / 1000,
    ...(coreBefore === undefined ? {} : { coreS: ((procCpuUs(process.pid) ?? coreBefore) - coreBefore) / 1e6 }),
    ...(values['taken-only'] ? { takenOnly: true as const } : {}),
    ...(partial || rows.length < jobs.length ? { partial: { measured: rows.length, planned: jobs.length } } : {}),
    rows,
  });
  // Rows from earlier runs (--resume: this code's stopped run; --reuse: peers and floors of other commits' runs).
  const files = (option: string) => ((values[option] as string | undefined) ?? '').split(',').map((f) => f.trim()).filter(Boolean).map(readResults);
  const resume = files('resume');
  for (const r of resume) {
    if (r.codeCommit && code && r.codeCommit !== code) throw new Error(`--resume: run ${r.label} measured Floodgate's code as of ${r.codeCommit}, this checkout has ${code}; use --reuse for another commit's peers`);
  }
  const taken = takeRows(jobs, settings, resume, files('reuse'));
  const toMeasure = jobs.filter((_, i) => taken[i] === undefined);
  const merge = (measured: readonly (InstrRow | undefined)[]) => {
    let next = 0;
    return taken.map((row) => row ?? measured[next++]).filter((r): r is InstrRow => r !== undefined);
  };
  if (toMeasure.length < jobs.length) console.error(`bench:instructions: ${jobs.length - toMeasure.length} rows taken from earlier runs, ${toMeasure.length} to measure`);
  // The file is written after every contender, so a run stopped early keeps what it measured.
  const file = resultsFile(label, date);
  console.error(`bench:instructions: results in ${relative(process.cwd(), file)} (rewritten after each contender)`);
  settings.onRow = (rows) => writeFileSync(file, `${JSON.stringify(results(merge(rows), true), null, 2)}\n`);
  // --taken-only: one results file of the rows --resume and --reuse give (e.g. Floodgate's rows of one run and the peers' of another), nothing measured.
  const measured = values['taken-only'] ? [] : await runInstructions(toMeasure, settings).finally(() => rmSync(settings.outDir, { recursive: true, force: true }));
  return results(merge(measured), false);
}

const resultsFile = (label: string, date: string) => {
  const dir = join(BENCH_DIR, 'results');
  mkdirSync(dir, { recursive: true });
  return join(dir, `instructions-${label.replace(/[^\w.-]+/g, '_')}-${date.replace(/[:.]/g, '-')}.json`);
};

async function main(): Promise<number> {
  const strings = ['frameworks', 'loads', 'regimes', 'contenders', 'peers', 'resume', 'reuse', 'requests', 'warmup', 'settle', 'connections', 'callers', 'parallel', 'label', 'render', 'compare', 'keep-dumps'];
  const options: Record<string, { type: 'string' | 'boolean' }> = Object.fromEntries(strings.map((o) => [o, { type: 'string' }]));
  options['no-docs'] = { type: 'boolean' };
  options['taken-only'] = { type: 'boolean' };
  options.help = { type: 'boolean' };
  const args = process.argv.slice(2).filter((a) => a !== '--');
  const values = parseArgs({ args, options, strict: true }).values as Record<string, string | boolean | undefined>;
  if (values.help) {
    console.log(HELP);
    return 0;
  }
  if (values.compare) {
    const [a, b] = (values.compare as string).split(',').map((f) => readResults(f.trim()));
    const { table, worst } = compareTable(a, b);
    console.log(`${table}\n\nlargest difference: ${(worst * 100).toFixed(2)}%`);
    return 0;
  }
  const rendered = values.render ? (values.render as string).split(',').map((f) => readResults(f.trim())) : undefined;
  const results = rendered ? mergeResults((values.label as string | undefined) ?? rendered.map((r) => r.label).join('+'), rendered) : await measureAll(values);
  if (!values.render) {
    const file = resultsFile(results.label, results.date);
    writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
    console.error(`bench:instructions: wrote ${relative(process.cwd(), file)}`);
  }
  console.log(renderInstructions(results));
  if (!values['no-docs'] && (!values.render || values.label)) console.error(`bench:instructions: wrote ${relative(process.cwd(), writePage(results))}`);
  return 0;
}

if (require.main === module) {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      killAllChildren();
      killCountedRedis();
      process.exit(130);
    });
  }
  main().then(
    (code) => process.exit(code),
    (error: Error) => {
      killAllChildren();
      console.error(`\nbench:instructions failed: ${error.stack ?? error.message}`);
      process.exit(1);
    },
  );
}
