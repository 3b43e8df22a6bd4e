// `pnpm bench`: runs every section against its own redis-server, writes results JSON, docs/benchmarks-details.md and .svg.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ALGORITHMS, type AlgorithmName } from '@floodgate/core';
import { startRedis, type RedisServer } from '@floodgate/testing';
import { runAccuracy } from './accuracy';
import { buildChildren, OUT_DIR } from './build';
import { againstSide, runMicro, type MicroSide } from './micro';
import { childLogDir, killAllChildren } from './children';
import { BENCH_DIR, REPO_DIR, loadAverage, machine, redisVersion, versions } from './env';
import { FULL as FLOOD_FULL, QUICK as FLOOD_QUICK, measureFlood, readFloodRuns, recordFloodRun, thisSide } from './flood';
import { runMemoryStore, runRedisMemory } from './memory';
import { profileServer } from './profile';
import { Progress } from './progress';
import { runRace } from './race';
import { runRedisCeiling } from './redis-ceiling';
import { renderMarkdown, spliceFrameworks, warnings } from './report';
import { evaluateGoals } from './goals';
import { renderSvg } from './svg';
import { carryOver } from './carry-over';
import { compareRuns } from './compare';
import { frameworkOf } from './frameworks';
import { planPinning, type Pinning } from './pinning';
import { DEFAULT_CALLERS, contendersFor, primaryAlgorithm, runThroughput, type ThroughputSettings } from './throughput';
import { BENCH_COALESCE, FRAMEWORKS, LOAD_SHAPES, type BenchCoalesce, type BenchResults, type Framework, type LoadShape, type ProfileRow } from './types';

const SECTIONS = ['accuracy', 'ceiling', 'flood', 'memory', 'micro', 'race', 'throughput'] as const;
type Section = (typeof SECTIONS)[number];

const HELP = `Usage: pnpm bench [options]

  --quick                 a few minutes: one short round, the default algorithm only
  --only LIST             sections, comma-separated: ${SECTIONS.join(',')} (default: all)
  --frameworks LIST       ${FRAMEWORKS.join(',')} (default: all)
  --algorithms LIST       Floodgate algorithms on Redis for throughput and the ceiling
                          (default: all; --quick: sliding-window-counter)
  --rounds N              throughput rounds (default 4; --quick 1)
  --seconds S             seconds per throughput run (default 4; --quick 1)
  --warmup S              warm-up seconds per server (default 2; --quick 0.5)
  --connections N         autocannon connections (default 10)
  --loads LIST            load shapes, comma-separated: one (every request from 127.0.0.1, one
                          subject), callers (X-Forwarded-For from --callers addresses, the
                          servers trusting the loopback proxy) (default: one,callers)
  --callers N             callers of the 'callers' load (default 10000)
  --coalesce LIST          also measure Floodgate on Redis with these RedisStore coalesce modes
                          (turn,in-flight,off), a contender each beside the default
  --lean                  throughput without the OpenTelemetry, hot-key and PING-per-request lines
                          (the goals need none of them; about a third shorter)
  --whole-page            a throughput run of some frameworks renders the page (Summary, Goals,
                          chart, Throughput) itself, rather than splicing those frameworks into
                          it; the sections it did not measure, and frameworks measured by runs of
                          their own, are kept from the page as it was, marked so
  --no-pin                do not pin processes to cores (default: the server under test on the
                          last core, autocannon and redis-server on the others, with taskset)
  --profile / --no-profile  CPU-profile Floodgate contenders that miss a goal
                          (default: on for full runs, off for --quick)
  --profile-ids LIST      CPU-profile these throughput contenders (ids as in the results,
                          e.g. koa/none,koa/floodgate-redis-sliding-window-counter/admit)
                          and report them, whether or not they miss a goal
  --max-minutes M         hard time budget; the run is stopped past it (default: twice the
                          planned length, at least 80; --quick at least 8)
  --against DIR           the micro section also measures another checkout's Floodgate
                          (e.g. a worktree of an older commit): before / after columns
  --note TEXT             a line for the report (e.g. "quiet machine"); repeatable
  --no-docs               write only bench/results/<date>.json
  --report FILE           only re-render docs/benchmarks-details.md and .svg from a results JSON
  --compare A.json,B.json only compare two results JSONs: every Floodgate figure of both, and
                          by how much they differ (for "do two runs agree")
  --help`;

interface Config {
  quick: boolean;
  sections: Set<Section>;
  frameworks: Framework[];
  algorithms: AlgorithmName[];
  rounds: number;
  seconds: number;
  warmup: number;
  connections: number;
  profile: boolean;
  profileIds: string[];
  maxMinutes: number;
  notes: string[];
  docs: boolean;
  report?: string;
  compare?: string[];
  against?: string;
  loads: LoadShape[];
  callers: number;
  lean: boolean;
  coalesce: BenchCoalesce[];
  pin: boolean;
  wholePage: boolean;
}

function list<T extends string>(value: string | undefined, allowed: readonly T[], option: string): T[] | undefined {
  if (value === undefined) return undefined;
  const items = value.split(',').map((s) => s.trim()).filter(Boolean);
  for (const item of items) {
    if (!allowed.includes(item as T)) throw new Error(`--${option}: "${item}" is not one of ${allowed.join(', ')}`);
  }
  return items as T[];
}

function positive(value: string | undefined, fallback: number, option: string): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${option}: expected a positive number, got "${value}"`);
  return n;
}

export function parseConfig(argv: string[]): Config | 'help' {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean', default: false },
      only: { type: 'string' },
      frameworks: { type: 'string' },
      algorithms: { type: 'string' },
      rounds: { type: 'string' },
      seconds: { type: 'string' },
      warmup: { type: 'string' },
      connections: { type: 'string' },
      profile: { type: 'boolean' },
      'no-profile': { type: 'boolean' },
      'profile-ids': { type: 'string' },
      'max-minutes': { type: 'string' },
      note: { type: 'string', multiple: true },
      'no-docs': { type: 'boolean', default: false },
      report: { type: 'string' },
      against: { type: 'string' },
      compare: { type: 'string' },
      loads: { type: 'string' },
      callers: { type: 'string' },
      lean: { type: 'boolean', default: false },
      coalesce: { type: 'string' },
      'no-pin': { type: 'boolean', default: false },
      'whole-page': { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (values.help) return 'help';
  const quick = values.quick ?? false;
  return {
    quick,
    sections: new Set(list(values.only, SECTIONS, 'only') ?? SECTIONS),
    frameworks: list(values.frameworks, FRAMEWORKS, 'frameworks') ?? [...FRAMEWORKS],
    algorithms: list(values.algorithms, ALGORITHMS, 'algorithms') ?? (quick ? ['sliding-window-counter'] : [...ALGORITHMS]),
    rounds: Math.round(positive(values.rounds, quick ? 1 : 4, 'rounds')),
    seconds: positive(values.seconds, quick ? 1 : 4, 'seconds'),
    warmup: positive(values.warmup, quick ? 0.5 : 2, 'warmup'),
    connections: Math.round(positive(values.connections, 10, 'connections')),
    profile: values['no-profile'] ? false : (values.profile ?? !quick),
    profileIds: values['profile-ids']?.split(',').map((s) => s.trim()).filter(Boolean) ?? [],
    maxMinutes: values['max-minutes'] === undefined ? NaN : positive(values['max-minutes'], 0, 'max-minutes'),
    notes: values.note ?? [],
    docs: !values['no-docs'],
    report: values.report,
    compare: values.compare?.split(',').map((s) => s.trim()).filter(Boolean),
    against: values.against,
    loads: list(values.loads, LOAD_SHAPES, 'loads') ?? [...LOAD_SHAPES],
    callers: Math.round(positive(values.callers, DEFAULT_CALLERS, 'callers')),
    lean: values.lean ?? false,
    coalesce: list(values.coalesce, BENCH_COALESCE, 'coalesce') ?? [],
    pin: !values['no-pin'],
    wholePage: values['whole-page'] ?? false,
  };
}

function writeDocs(results: BenchResults, keepUnmeasured = false): string[] {
  // The Flood section shows every recorded run (bench/flood-runs.json), whether or not this run had one.
  if (!results.flood?.length) results.flood = readFloodRuns();
  const docs = join(REPO_DIR, 'docs');
  mkdirSync(docs, { recursive: true });
  const file = join(docs, 'benchmarks-details.md');
  let page = renderMarkdown(results, 'benchmarks.svg');
  // A run of some sections keeps the others from the page as it was, each saying which run measured it.
  if (keepUnmeasured && existsSync(file)) page = carryOver(readFileSync(file, 'utf8'), page).page;
  writeFileSync(join(docs, 'benchmarks.svg'), renderSvg(results));
  writeFileSync(file, page);
  return [file, join(docs, 'benchmarks.svg')];
}

/**
 * A run of some frameworks' throughput only (`--only throughput --frameworks ...`) does not own the
 * page: it puts those frameworks' sections and Summary rows into the page a full run wrote, and
 * leaves the rest (the other frameworks, the chart, every other section) as that run measured it.
 */
function spliceable(config: Config): boolean {
  return !config.wholePage && config.sections.size === 1 && config.sections.has('throughput') && config.frameworks.length < FRAMEWORKS.length;
}

/** A results file with some frameworks' throughput and nothing else: what a spliceable run writes. */
function throughputOnly(results: BenchResults): boolean {
  const frameworks = new Set(results.throughput.map((r) => r.framework));
  const other = results.redisCeiling.length + results.race.length + results.accuracy.length + results.redisMemory.length + results.memoryStore.length;
  return frameworks.size > 0 && frameworks.size < FRAMEWORKS.length && other === 0 && !results.micro && !results.flood?.length;
}

const commandLine = () => `pnpm bench ${process.argv.slice(2).filter((a) => a !== '--').join(' ')}`.trim();

function spliceDocs(results: BenchResults, command = commandLine()): string[] {
  const page = join(REPO_DIR, 'docs', 'benchmarks-details.md');
  writeFileSync(page, spliceFrameworks(readFileSync(page, 'utf8'), results, command));
  return [page];
}

async function profileOne(id: string, label: string, config: Config, redis: RedisServer, progress: Progress): Promise<ProfileRow> {
  const framework = frameworkOf(id);
  if (!framework) throw new Error(`--profile-ids: "${id}" does not start with a framework (${FRAMEWORKS.join(', ')})`);
  // Every algorithm, so any id can be profiled; the memory and hot-key lines on the run's own algorithm.
  const settings = { ...throughputSettings(config), algorithms: ALGORITHMS, primary: primaryAlgorithm(config.algorithms) };
  const contender = config.loads.flatMap((load) => contendersFor(framework, settings, load)).find((c) => c.id === id);
  if (!contender) throw new Error(`--profile-ids: no contender "${id}"`);
  progress.step(`profile: ${contender.id} (--cpu-prof)`, (config.warmup + config.seconds * 2) * 1000);
  return profileServer(
    contender.id,
    label,
    { framework, redisPort: redis.port, mounts: [{ path: '/', limiter: contender.limiter }], trustProxy: contender.load === 'callers' },
    { seconds: config.seconds * 2, warmupSeconds: config.warmup, connections: config.connections, callers: contender.load === 'callers' ? config.callers : undefined },
  );
}

async function profileShortfalls(results: BenchResults, config: Config, redis: RedisServer, progress: Progress): Promise<void> {
  // Each Floodgate contender behind a missed goal once (goal (b)'s and (e)'s memory rows, (c), (d), (f)'s Redis row, ...).
  const missed = evaluateGoals(results).filter((c) => c.met === false && config.frameworks.includes(c.framework));
  for (const id of [...new Set(missed.map((c) => c.id))]) {
    const row = results.throughput.find((r) => r.id === id);
    if (!row) continue;
    const { framework } = row;
    const label = `${framework}: ${row.label}, ${row.regime === 'admit' ? 'admitting' : 'rejecting'}`;
    results.profiles.push(await profileOne(id, label, config, redis, progress));
    // The bare route beside it: what the framework alone costs per request on this machine.
    const bare = id.endsWith('@callers') ? `${framework}/none@callers` : `${framework}/none`;
    if (!results.profiles.some((p) => p.id === bare)) {
      results.profiles.push(await profileOne(bare, `${framework}: no limiter (bare route)${id.endsWith('@callers') ? `, ${config.callers.toLocaleString('en-US')} callers` : ''}`, config, redis, progress));
    }
  }
}

function throughputSettings(config: Config, pinning?: Pinning): ThroughputSettings {
  return {
    loads: config.loads,
    callers: config.callers,
    lean: config.lean,
    coalesce: config.coalesce,
    pinning,
    frameworks: config.frameworks,
    rounds: config.rounds,
    secondsPerRun: config.seconds,
    warmupSeconds: config.warmup,
    connections: config.connections,
    algorithms: config.algorithms,
    hotKeys: true,
  };
}

/** A rough length of the run, for the progress line's ETA. */
function plannedMs(config: Config): number {
  let ms = 5_000;
  const t = throughputSettings(config);
  if (config.sections.has('throughput')) {
    for (const fw of config.frameworks) {
      const n = contendersFor(fw, t).length + 2; // the bare route and the per-turn floor run twice a round
      ms += config.loads.length * n * (700 + (config.warmup + config.rounds * config.seconds) * 1000 + config.rounds * 150);
    }
  }
  if (config.sections.has('ceiling')) ms += config.algorithms.length * 3 * (config.quick ? 1.5 : 4) * 1000;
  if (config.sections.has('race')) ms += config.quick ? 10_000 : 45_000;
  if (config.sections.has('memory')) ms += config.quick ? 30_000 : 120_000;
  if (config.sections.has('micro')) ms += (config.quick ? 15_000 : 60_000) * (config.against ? 2 : 1);
  if (config.sections.has('flood')) ms += config.quick ? 60_000 : 240_000;
  return ms;
}

async function main(): Promise<number> {
  const config = parseConfig(process.argv.slice(2).filter((a) => a !== '--'));
  if (config === 'help') {
    console.log(HELP);
    return 0;
  }
  if (config.compare) {
    if (config.compare.length !== 2) throw new Error('--compare: two results files, comma-separated');
    const [a, b] = config.compare.map((f) => JSON.parse(readFileSync(resolve(process.env.INIT_CWD ?? process.cwd(), f), 'utf8')) as BenchResults);
    console.log(compareRuns(a, b, config.compare[0], config.compare[1]));
    return 0;
  }
  if (config.report) {
    // pnpm runs this in bench/: a relative path is taken from where the command was typed.
    const results = JSON.parse(readFileSync(resolve(process.env.INIT_CWD ?? process.cwd(), config.report), 'utf8')) as BenchResults;
    // A saved run of some frameworks' throughput only is spliced in again, as when it ran (`command` says what measured it).
    const files = throughputOnly(results) ? spliceDocs(results, results.meta.command ?? 'pnpm bench --only throughput --frameworks ...') : writeDocs(results);
    for (const file of files) console.log(`wrote ${relative(process.cwd(), file)}`);
    return 0;
  }

  // Six frameworks take longer than the three the old fixed budget was set for: scale it with the plan.
  if (Number.isNaN(config.maxMinutes)) config.maxMinutes = Math.max(config.quick ? 8 : 80, Math.ceil((2 * plannedMs(config)) / 60_000));
  const started = Date.now();
  const loadStart = loadAverage();
  const pinning = planPinning(config.pin);
  const progress = new Progress(plannedMs(config));
  progress.step('building the child processes and Floodgate (esbuild, as a release build)');
  await buildChildren();
  const redis = await startRedis();
  const watchdog = setTimeout(() => {
    progress.finish(`bench: stopped after its ${config.maxMinutes}-minute budget (--max-minutes)`);
    killAllChildren();
    void redis.stop().finally(() => process.exit(2));
  }, config.maxMinutes * 60_000);
  watchdog.unref();
  const interrupt = () => {
    progress.finish('bench: interrupted');
    killAllChildren();
    void redis.stop().finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);

  // Hot-key mode is part of core: its lines are always measured (the flag stays in the results for older runs).
  const hotKeys = true;
  const results: BenchResults = {
    meta: {
      date: new Date().toISOString(),
      command: commandLine(),
      mode: config.quick ? 'quick' : 'full',
      durationS: 0,
      ...machine(),
      redis: redisVersion(),
      loadAverageStart: loadStart,
      loadAverageEnd: [],
      versions: versions(),
      settings: {
        rounds: config.rounds,
        secondsPerRun: config.seconds,
        warmupSeconds: config.warmup,
        connections: config.connections,
        raceProcesses: config.quick ? 3 : 4,
        callers: config.callers,
      },
      pinning: { pinned: pinning.pinned, how: pinning.how },
      hotKeys,
      notes: [],
    },
    throughput: [],
    redisCeiling: [],
    race: [],
    accuracy: [],
    redisMemory: [],
    memoryStore: [],
    memoryStoreEmptyBytes: null,
    limiterBytes: null,
    profiles: [],
    micro: null,
  };
  progress.note(
    `bench: ${results.meta.mode} run; redis-server on port ${redis.port}; frameworks: ${config.frameworks.join(', ')}; child logs in ${childLogDir()}`,
  );

  // A section that fails is reported and the others still run: one broken peer must not cost the whole run.
  const failures: string[] = [];
  const section = async (name: Section, run: () => Promise<void>) => {
    if (!config.sections.has(name)) return;
    try {
      await run();
    } catch (error) {
      const message = `${name} failed: ${(error as Error).message.split('\n')[0]}`;
      failures.push(message);
      progress.note(`bench: ${(error as Error).stack ?? message}`);
    }
  };
  try {
    await section('accuracy', async () => {
      progress.step('accuracy: adversarial patterns on MemoryStore with an injected clock', 1_000);
      results.accuracy = await runAccuracy(100, 60_000);
    });
    await section('ceiling', async () => {
      results.redisCeiling = await runRedisCeiling(
        redis,
        { algorithms: config.algorithms, seconds: config.quick ? 1 : 3, warmupSeconds: config.quick ? 0.3 : 1, connections: config.connections },
        progress,
      );
    });
    await section('memory', async () => {
      results.redisMemory = await runRedisMemory(redis, [100, 1_000], progress);
      const store = await runMemoryStore(
        config.quick ? { callers: 4_000, filledCallers: 1_000, limit: 100, samples: 3 } : { callers: 50_000, filledCallers: 10_000, limit: 100, samples: 5 },
        progress,
      );
      results.memoryStore = store.rows;
      results.memoryStoreEmptyBytes = Math.round(store.emptyStoreBytes);
      results.limiterBytes = Math.round(store.limiterBytes);
    });
    await section('micro', async () => {
      progress.step('micro: µs per decision of the core, the HTTP pipeline and each adapter (bench:micro)', config.quick ? 15_000 : 60_000);
      const sides: MicroSide[] = [{ label: 'this checkout', dir: OUT_DIR }];
      if (config.against) sides.unshift(await againstSide(config.against));
      results.micro = runMicro(sides, config.quick ? { ops: 5_000, samples: 3, only: [] } : { ops: 50_000, samples: 7, only: [] }, config.quick ? 1 : 3);
    });
    await section('flood', async () => {
      // Its own redis-server and Cluster: a flood may leave the shared server busy with late calls.
      const command = `pnpm bench${config.quick ? ' --quick' : ''}`;
      const [run] = await measureFlood(config.quick ? FLOOD_QUICK : FLOOD_FULL, config.quick, command, [thisSide()], progress);
      results.flood = config.docs ? recordFloodRun(run) : [...readFloodRuns(), run];
    });
    await section('race', async () => {
      results.race = await runRace(
        redis,
        {
          processes: results.meta.settings.raceProcesses,
          limit: 50,
          attemptsPerProcess: 100,
          connections: 20,
          repetitions: config.quick ? 1 : 3,
          algorithms: ALGORITHMS,
          hotKeys,
        },
        progress,
      );
    });
    await section('throughput', async () => {
      progress.note(`bench: throughput ${pinning.how}`);
      results.throughput = await runThroughput(redis, throughputSettings(config, pinning), progress);
      if (config.profile) await profileShortfalls(results, config, redis, progress);
    });
    if (config.profileIds.length) {
      try {
        for (const id of config.profileIds) results.profiles.push(await profileOne(id, id, config, redis, progress));
      } catch (error) {
        failures.push(`profile failed: ${(error as Error).message.split('\n')[0]}`);
      }
    }
  } finally {
    clearTimeout(watchdog);
    killAllChildren();
    await redis.stop();
  }

  results.meta.durationS = (Date.now() - started) / 1000;
  results.meta.loadAverageEnd = loadAverage();
  results.meta.notes = [...config.notes, ...failures, ...warnings(results)];

  const resultsDir = join(BENCH_DIR, 'results');
  mkdirSync(resultsDir, { recursive: true });
  const resultsFile = join(resultsDir, `${results.meta.date.replace(/[:.]/g, '-')}.json`);
  writeFileSync(resultsFile, `${JSON.stringify(results, null, 2)}\n`);
  const partial = config.sections.size < SECTIONS.length;
  // The page's Summary, Goals and Throughput come from a throughput run and are not carried over: a
  // run without one would drop them, so it writes its results file only (render the page from a run
  // that measured throughput, with --only throughput,<sections>).
  const docs = config.docs && config.sections.has('throughput');
  if (config.docs && !docs) console.error('bench: this run measured no throughput: docs/benchmarks-details.md is left as it is (its Summary, Goals and Throughput would be lost); include throughput in --only to render the page');
  const written = [resultsFile, ...(docs ? (spliceable(config) ? spliceDocs(results, results.meta.command) : writeDocs(results, partial)) : [])];
  progress.finish(`bench: done in ${Math.round(results.meta.durationS)} s; wrote ${written.map((f) => relative(process.cwd(), f)).join(', ')}`);
  for (const note of results.meta.notes) console.error(`note: ${note}`);
  return failures.length ? 1 : 0;
}

if (require.main === module) {
  main().then(
    (code) => process.exit(code),
    (error: Error) => {
      killAllChildren();
      console.error(`\nbench failed: ${error.stack ?? error.message}`);
      process.exit(1);
    },
  );
}
