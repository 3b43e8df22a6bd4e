// `pnpm bench:instructions`' measurement: each contender's server under callgrind, warmed, zeroed, loaded, dumped.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseCommandStats } from '@floodgate/testing';
import { startServer } from './children';
import { callgrindWrapper, compileInstructions, dumpCountersFile, instrumentOn, startCountedRedis, zeroCounters, type CountedRedis } from './instructions-callgrind';
import type { InstrLoad, InstrResults, InstrRow } from './instructions-types';
import { runLoad } from './load';
import { contendersFor, type Contender } from './throughput';
import { frameworkInfo } from './frameworks';
import { procCpuUs } from './proc-cpu';
import { DEFAULT_ALGORITHM, type Framework } from './types';

export interface InstrSettings {
  frameworks: readonly Framework[];
  loads: readonly InstrLoad[];
  regimes: readonly ('admit' | 'reject')[];
  /** Contender ids' middle parts to keep (e.g. 'floodgate-memory', 'fastify-rate-limit'); empty: all. The bare route is always kept. */
  contenders: readonly string[];
  /** Which peers: every one ('all'), each framework's cheapest a store ('best', see PeerSpec.best), or these libraries' kinds (e.g. ['rate-limiter-flexible']). */
  peers: 'all' | 'best' | readonly string[];
  /** Requests counted per contender. */
  requests: number;
  /** Requests before counting, instrumentation off (V8 tiers up; pools fill). */
  warmup: number;
  /** Requests after instrumentation is switched on and before the counters are zeroed (the first ones after the switch cost several times the steady figure). */
  settle: number;
  /** autocannon's connections (1: one request per event-loop turn, a count independent of the machine's load). */
  connections: number;
  callers: number;
  /** Contenders measured at once, each lane with its own redis-server. */
  parallel: number;
  /** Where the compiled server and packages are (a directory of this run's own, so another build cannot change them under it). */
  outDir: string;
  /** Where callgrind writes its dumps and leaves them (for callgrind_annotate); unset: a temporary directory, removed at the end. */
  keepDir?: string;
  log: (line: string) => void;
  /** Called after each contender with the rows measured so far, one slot per job in plan order (undefined: not yet). */
  onRow?: (rows: readonly (InstrRow | undefined)[]) => void;
}

export interface InstrJob {
  contender: Contender;
  load: InstrLoad;
}

/** Node's flags under callgrind: the same for every contender. */
export const NODE_FLAGS = ['--single-threaded', '--predictable-gc-schedule', '--no-memory-reducer'];

/** The part of a contender id between the framework and the regime: 'none', 'floodgate-memory', 'koa-ratelimit', ... */
export const contenderKind = (id: string) => id.replace(/@.*$/, '').split('/')[1] ?? id;

/** Every contender to measure, in the order the tables list them: per load, per framework, the throughput section's list (lean, default algorithm). */
export function planJobs(settings: InstrSettings): InstrJob[] {
  const jobs: InstrJob[] = [];
  // Load outermost: a run stopped early has every framework of its first load.
  for (const load of settings.loads) {
    for (const framework of settings.frameworks) {
      const list = contendersFor(framework, { frameworks: [framework], rounds: 1, secondsPerRun: 1, warmupSeconds: 1, connections: settings.connections, algorithms: [DEFAULT_ALGORITHM], hotKeys: false, lean: true }, load);
      for (const c of list) {
        if (c.regime !== null && !settings.regimes.includes(c.regime)) continue;
        const kind = contenderKind(c.id);
        if (kind !== 'none' && settings.contenders.length > 0 && !settings.contenders.includes(kind)) continue;
        if (c.group === 'peer' && !peerWanted(c, settings.peers)) continue;
        jobs.push({ contender: c, load });
      }
    }
  }
  // Rows no goal reads (the floor; peers' 429s) after every row a goal reads: a run stopped early has every verdict first.
  return [...jobs.filter((j) => !contextOnly(j.contender)), ...jobs.filter((j) => contextOnly(j.contender))];
}

/** A contender no goal of issue #44 reads: the floor, and a peer's rejecting (the rejecting goals compare with the bare route). */
export const contextOnly = (c: Contender) => c.group === 'floor' || (c.group === 'peer' && c.regime === 'reject');

/** Whether `--peers` keeps this peer contender. */
function peerWanted(c: Contender, peers: InstrSettings['peers']): boolean {
  if (peers === 'all') return true;
  if (peers === 'best') return frameworkInfo(c.framework).peers.some((p) => p.kind === c.limiter.kind && p.store === c.store && p.best === true);
  return peers.includes(c.limiter.kind);
}

/** The settings two runs must share for one to take the other's rows. */
const SAME = ['requests', 'warmup', 'settle', 'connections', 'callers'] as const;

/**
 * Rows taken from earlier runs instead of measured, one per job or undefined. `resume`: a stopped run
 * of this same code (every row it has). `reuse`: runs of other commits, whose rows of code this
 * repository does not hold (peers and floors: their libraries' code, the same framework) stay true;
 * each keeps the bare route of its own run (`bareIr`), since added instructions are counted within a
 * run. Floodgate's rows and the bare route are never reused. Throws if a file's settings differ.
 */
export function takeRows(jobs: readonly InstrJob[], settings: Pick<InstrSettings, (typeof SAME)[number]>, resume: readonly InstrResults[], reuse: readonly InstrResults[]): (InstrRow | undefined)[] {
  for (const r of [...resume, ...reuse]) {
    // A run before major GC was taken apart counted it in its rows: its figures and these differ by a cycle.
    if (!r.rows.some((x) => x.majorGcIr !== undefined)) throw new Error(`run ${r.label}: counted V8's major GC cycles in its rows (before they were reported apart); its rows cannot be taken`);
    const differ = SAME.filter((key) => r.settings[key] !== settings[key]);
    if (differ.length > 0) throw new Error(`run ${r.label}: ${differ.map((key) => `${key} ${r.settings[key]} (here ${settings[key]})`).join(', ')}; its rows were counted differently and cannot be taken`);
  }
  return jobs.map((job) => {
    const id = job.contender.id;
    for (const r of resume) {
      const row = r.rows.find((x) => x.id === id);
      if (row) return row;
    }
    if (job.contender.group !== 'peer' && job.contender.group !== 'floor') return undefined;
    for (const r of reuse) {
      const row = r.rows.find((x) => x.id === id);
      const bare = r.rows.find((x) => x.framework === job.contender.framework && x.load === job.load && x.group === 'ceiling');
      if (row && bare) return { ...row, from: row.from ?? r.label, bareIr: row.bareIr ?? bare.serverIr };
    }
    return undefined;
  });
}

const SCRIPT_COMMANDS = new Set(['evalsha', 'eval', 'evalsha_ro', 'eval_ro', 'fcall', 'fcall_ro']);
const BOOKKEEPING = new Set(['info', 'config', 'ping', 'client', 'hello', 'command', 'select', 'script']);

function redisDelta(before: Record<string, number>, after: Record<string, number>) {
  let scripts = 0;
  let commands = 0;
  for (const [name, calls] of Object.entries(after)) {
    const n = calls - (before[name] ?? 0);
    if (SCRIPT_COMMANDS.has(name.toLowerCase())) scripts += n;
    if (!BOOKKEEPING.has(name.toLowerCase())) commands += n;
  }
  return { scripts, commands };
}

/** One load a contender is sent: `callers` (undefined: one subject) from `callerStart` on. */
export interface LoadStep {
  connections: number;
  amount: number;
  callers: number | undefined;
  callerStart: number;
}

/**
 * What a contender is sent, in order: (rejecting with many callers) every caller's one unit spent,
 * the warm-up, the settling (instrumentation on) and the counted requests. Warm-up and settling on
 * 10 connections whatever is counted: uncounted, so only their speed matters, and one request at a
 * time waits on the scheduler at every hop of a busy machine. One rotation of the callers runs over
 * every step: each starts where the last stopped, so a counted request's caller was last seen
 * `callers` requests before whatever the warm-up's size (each load starting again at the first caller
 * made the counted window's first callers ones the settling had just sent, a pattern that moved with
 * --warmup, --settle and --requests).
 */
export function loadPlan(job: InstrJob, settings: Pick<InstrSettings, 'callers' | 'connections' | 'warmup' | 'settle' | 'requests'>): { spend?: LoadStep; warmup: LoadStep; settle: LoadStep; counted: LoadStep } {
  const callers = job.load === 'callers' ? settings.callers : undefined;
  const busy = Math.max(10, settings.connections);
  let sent = 0;
  const step = (connections: number, amount: number): LoadStep => {
    const s = { connections, amount, callers, callerStart: sent };
    sent += amount;
    return s;
  };
  const spend = callers && job.contender.regime === 'reject' ? step(busy, callers) : undefined;
  const warmup = step(busy, settings.warmup);
  const settle = step(busy, settings.settle);
  return { ...(spend ? { spend } : {}), warmup, settle, counted: step(settings.connections, settings.requests) };
}

/** One contender: start under callgrind, warm up, zero server and Redis, send the counted requests, dump both. */
async function measure(job: InstrJob, settings: InstrSettings, dir: string, redis: CountedRedis): Promise<InstrRow> {
  const c = job.contender;
  const usesRedis = c.store === 'redis';
  const server = await startServer(
    { framework: c.framework, ...(usesRedis ? { redisPort: redis.port } : {}), mounts: [{ path: '/', limiter: c.limiter }], trustProxy: job.load === 'callers' },
    c.id,
    // V8 on the counted thread only, and a GC schedule that does not follow the clock (no memory
    // reducer, fixed heap growth): a slow request on a busy machine must not buy extra collections.
    NODE_FLAGS,
    undefined,
    { wrapper: callgrindWrapper(dir, 'node', true), timeoutMs: 600_000, dir: settings.outDir },
  );
  if (settings.keepDir) settings.log(`${c.id}: callgrind dumps ${join(dir, `node.${server.pid}.*`)}`);
  try {
    const plan = loadPlan(job, settings);
    const load = (step: LoadStep | undefined) => (step ? runLoad({ url: server.url, connections: step.connections, amount: step.amount, callers: step.callers, callerStart: step.callerStart }) : undefined);
    const phase = { started: Date.now(), warmS: 0, settleS: 0 };
    await load(plan.spend);
    await load(plan.warmup);
    phase.warmS = (Date.now() - phase.started) / 1000;
    await instrumentOn(server.pid);
    await load(plan.settle);
    phase.settleS = (Date.now() - phase.started) / 1000 - phase.warmS;
    // No forced collection (node --expose-gc, gc()) before counting: tried, it deoptimised most of the
    // server's code (87 deoptimisations, 240 functions compiled again over the next 10,000 requests),
    // so the window measured a second warm-up, not the steady state.
    const statsBefore = usesRedis ? parseCommandStats((await redis.admin.info('commandstats')) as string) : {};
    await Promise.all([zeroCounters(server.pid), usesRedis ? redis.zero() : undefined]);
    const started = Date.now();
    const result = (await load(plan.counted))!;
    const windowS = (Date.now() - started) / 1000;
    const [dump, redisIr] = await Promise.all([dumpCountersFile(dir, 'node', server.pid), usesRedis ? redis.dump() : 0]);
    const { compile: compileIr, gc: gcIr, majorGc } = await compileInstructions(dump.file);
    const statsAfter = usesRedis ? parseCommandStats((await redis.admin.info('commandstats')) as string) : {};
    const serverCoreS = (procCpuUs(server.pid) ?? NaN) / 1e6;
    settings.log(`${c.id}: warm-up ${phase.warmS.toFixed(0)} s, settling ${phase.settleS.toFixed(0)} s, counted ${windowS.toFixed(0)} s, annotated and done at ${((Date.now() - phase.started) / 1000).toFixed(0)} s; server ${serverCoreS.toFixed(0)} core-s`);
    const n = result.total || 1;
    const delta = redisDelta(statsBefore, statsAfter);
    return {
      framework: c.framework,
      load: job.load,
      regime: c.regime,
      id: c.id,
      label: c.label,
      group: c.group,
      store: c.store,
      responses: result.total,
      ok: result.ok,
      limited: result.limited,
      errors: result.errors,
      serverIr: (dump.ir - compileIr - majorGc) / n,
      compileIr: compileIr / n,
      gcIr: gcIr / n,
      majorGcIr: majorGc / n,
      redisIr: usesRedis ? redisIr / n : null,
      scriptCalls: usesRedis ? delta.scripts / n : null,
      redisCommands: usesRedis ? delta.commands / n : null,
      windowS,
      serverCoreS,
      ...(settings.keepDir ? { dump: dump.file } : {}),
    };
  } finally {
    await server.stop();
  }
}

/** The counted redis-servers running now: stopped on Ctrl-C too (stopCountedRedis). */
const redisServers = new Set<CountedRedis>();
export const killCountedRedis = () => redisServers.forEach((r) => r.kill());

/** Every job, `parallel` lanes at a time (each lane its own counted redis-server); rows in plan order. */
export async function runInstructions(jobs: readonly InstrJob[], settings: InstrSettings): Promise<InstrRow[]> {
  const dir = settings.keepDir ?? mkdtempSync(join(tmpdir(), 'floodgate-callgrind-'));
  if (settings.keepDir) mkdirSync(dir, { recursive: true });
  const rows: (InstrRow | undefined)[] = new Array(jobs.length);
  let next = 0;
  const lane = async (index: number) => {
    const redis = await startCountedRedis(dir, `redis-${index}`);
    redisServers.add(redis);
    try {
      while (next < jobs.length) {
        const at = next++;
        const t = Date.now();
        rows[at] = await measure(jobs[at], settings, dir, redis);
        const r = rows[at]!;
        settings.onRow?.(rows);
        settings.log(`[${at + 1}/${jobs.length}] ${r.id}: ${Math.round(r.serverIr)} Ir/request (+${Math.round(r.compileIr ?? 0)} compiling, +${Math.round(r.majorGcIr ?? 0)} major GC; collector ${Math.round(r.gcIr ?? 0)})${r.redisIr === null ? '' : `, Redis ${Math.round(r.redisIr)}, ${r.scriptCalls!.toFixed(2)} calls`} (${((Date.now() - t) / 1000).toFixed(0)} s)`);
      }
    } finally {
      redisServers.delete(redis);
      await redis.stop();
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.max(1, Math.min(settings.parallel, jobs.length)) }, (_, i) => lane(i)));
  } finally {
    if (!settings.keepDir) rmSync(dir, { recursive: true, force: true });
  }
  return rows.filter((r): r is InstrRow => r !== undefined);
}
