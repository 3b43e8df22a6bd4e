// Callgrind plumbing for `pnpm bench:instructions`: run a process under valgrind, zero its counters, dump and read them.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';

const run = promisify(execFile);

/**
 * valgrind's command line for a process whose instructions are counted: callgrind, no cache or
 * branch simulation (instructions only), one output file per pid in `dir`. `late`: instrumentation
 * off until `instrumentOn` (the warm-up then runs several times faster: most of a warm-up under
 * full instrumentation is V8 compiling, slowly).
 */
export function callgrindWrapper(dir: string, name: string, late = false): string[] {
  return ['valgrind', '--tool=callgrind', `--callgrind-out-file=${join(dir, `${name}.%p`)}`, '--dump-instr=no', '--compress-strings=no', ...(late ? ['--instr-atstart=no'] : [])];
}

/** Turns callgrind's instrumentation on in a process started with `late`. */
export async function instrumentOn(pid: number): Promise<void> {
  await run('callgrind_control', ['-i', 'on', String(pid)], { timeout: 60_000 });
}

/** Whether valgrind and callgrind_control are on the PATH. */
export async function haveValgrind(): Promise<boolean> {
  try {
    await run('valgrind', ['--version']);
    await run('callgrind_control', ['-h']).catch((error: { stdout?: string }) => {
      if (!String(error.stdout ?? '').includes('callgrind_control')) throw error;
    });
    return true;
  } catch {
    return false;
  }
}

/** Zeroes the instruction counters of a process running under callgrind. */
export async function zeroCounters(pid: number): Promise<void> {
  await run('callgrind_control', ['-z', String(pid)], { timeout: 60_000 });
}

/**
 * Dumps a process's counters (callgrind writes `<name>.<pid>.<n>` and zeroes them) and returns the
 * instructions counted since the last zero or dump: the dump's `summary:` line.
 */
export async function dumpCounters(dir: string, name: string, pid: number): Promise<number> {
  return (await dumpCountersFile(dir, name, pid)).ir;
}

/** `dumpCounters`, with the dump file's path (for `compileInstructions`). */
export async function dumpCountersFile(dir: string, name: string, pid: number): Promise<{ ir: number; file: string }> {
  const prefix = `${name}.${pid}.`;
  const before = new Set(readdirSync(dir).filter((f) => f.startsWith(prefix)));
  await run('callgrind_control', ['-d', String(pid)], { timeout: 60_000 });
  for (let attempt = 0; attempt < 600; attempt++) {
    const fresh = readdirSync(dir).filter((f) => f.startsWith(prefix) && !before.has(f));
    for (const file of fresh) {
      const summary = /^summary:\s*(\d+)/m.exec(readFileSync(join(dir, file), 'utf8'));
      if (summary) return { ir: Number(summary[1]), file: join(dir, file) };
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`callgrind: no dump of pid ${pid} appeared in ${dir}`);
}

/** V8's compilers as entered from JavaScript: `Runtime_CompileOptimized`, `Runtime_CompileLazy`, ... (none calls another). */
const COMPILE_ENTRY = /^\s*([\d,]+)\s.*v8::internal::Runtime_Compile\w*\(/;

/**
 * The instructions a dump spent in V8's compilers (inclusive: Turbofan's pipeline under
 * `Runtime_CompileOptimized`, lazy and baseline compiles). Compilation is the JIT warming up, not a
 * request's cost: with `--single-threaded` it runs on the counted thread, in bursts whose timing
 * moved a row by several percent between two runs of the same code.
 */
export async function compileInstructions(file: string): Promise<{ compile: number; gc: number; majorGc: number }> {
  const { stdout } = await run('callgrind_annotate', ['--inclusive=yes', '--threshold=100', file], { maxBuffer: 256 * 1024 * 1024, timeout: 600_000 });
  const major = majorGcLines(stdout);
  // The mark-compact that ends a cycle runs under Heap::CollectGarbage: counted once, in the cycle.
  return { compile: compileLines(stdout), gc: collectorLines(stdout) - major.markCompact, majorGc: major.total };
}

/**
 * A V8 major GC cycle's three parts, entered from different places and none inside another (checked
 * with `callgrind_annotate --tree=caller` on Express and Fastify dumps: Step's callers are
 * `AdvanceAndFinalizeIfComplete` and the allocation observer, StartIncrementalMarking's the marking
 * job, MarkCompactCollector's `Heap::MarkCompact`): the incremental marking steps, the cycle's start
 * (roots, finishing the previous cycle's sweeping) and the mark-compact that finishes it.
 */
const MAJOR_GC_ENTRIES: readonly [RegExp, 'step' | 'start' | 'markCompact'][] = [
  [/^\s*([\d,]+)\s.*v8::internal::IncrementalMarking::Step\(/, 'step'],
  [/^\s*([\d,]+)\s.*v8::internal::Heap::StartIncrementalMarking\(/, 'start'],
  [/^\s*([\d,]+)\s.*v8::internal::MarkCompactCollector::CollectGarbage\(/, 'markCompact'],
];

/**
 * A major GC cycle's instructions in `callgrind_annotate --inclusive=yes` output. When a cycle falls
 * in a counted window of a few thousand requests depends on the run's history (under callgrind the
 * JIT keeps compiling and grows the old generation until one starts), not on the request: one run
 * of a route has one in its window and the next none, 20k to 60k a request apart
 * (bench/instructions-runs/perf44m2-bimodal.md). Left out of the verdict and reported apart, as the
 * compilers are; the scavenges, which follow what each request allocates, stay counted.
 */
export function majorGcLines(annotated: string): { total: number; markCompact: number } {
  const parts = { step: 0, start: 0, markCompact: 0 };
  for (const line of annotated.split('\n')) {
    for (const [re, part] of MAJOR_GC_ENTRIES) {
      const m = re.exec(line);
      if (m) parts[part] += Number(m[1].replace(/,/g, ''));
    }
  }
  return { total: parts.step + parts.start + parts.markCompact, markCompact: parts.markCompact };
}

/** V8's collections, entered through `Heap::CollectGarbage` (scavenges and full collections alike). */
const GC_ENTRY = /^\s*([\d,]+)\s.*v8::internal::Heap::CollectGarbage\(/;

/**
 * The collector's inclusive instructions in `callgrind_annotate --inclusive=yes` output: counted
 * (a limiter's retained state is its cost), and reported apart, because one full collection more
 * or less in a window of a few thousand requests moves a row that keeps state per caller.
 */
export function collectorLines(annotated: string): number {
  let total = 0;
  for (const line of annotated.split('\n')) {
    const m = GC_ENTRY.exec(line);
    if (m) total += Number(m[1].replace(/,/g, ''));
  }
  return total;
}

/** The compilers' inclusive instructions in `callgrind_annotate --inclusive=yes` output. */
export function compileLines(annotated: string): number {
  let total = 0;
  for (const line of annotated.split('\n')) {
    const m = COMPILE_ENTRY.exec(line);
    if (m) total += Number(m[1].replace(/,/g, ''));
  }
  return total;
}

/** A free loopback TCP port (bound and released: a race with another process is possible but harmless here). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** A redis-server of the bench's own under callgrind, with an admin client for INFO. */
export interface CountedRedis {
  readonly port: number;
  readonly pid: number;
  readonly admin: Redis;
  /** Redis's instructions since the last zero. */
  dump(): Promise<number>;
  zero(): Promise<void>;
  stop(): Promise<void>;
  /** SIGKILL at once (on Ctrl-C, where nothing can be awaited). */
  kill(): void;
}

/** Starts redis-server under callgrind on a free loopback port, no persistence, and waits for PING. */
export async function startCountedRedis(dir: string, name: string): Promise<CountedRedis> {
  const port = await freePort();
  // hz 1 (default 10): serverCron and its expiry cycle run on the clock whatever the calls, so under
  // callgrind a window that lasts longer (a busy machine) would count more of them.
  const args = ['redis-server', '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'no', '--hz', '1'];
  const [file, ...rest] = [...callgrindWrapper(dir, name), ...args];
  const child: ChildProcess = spawn(file, rest, { stdio: 'ignore' });
  const pid = child.pid ?? -1;
  const admin = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  admin.on('error', () => {});
  const stop = async () => {
    admin.disconnect();
    if (child.exitCode === null && child.signalCode === null) {
      await new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      });
    }
  };
  for (let attempt = 0; ; attempt++) {
    try {
      await admin.connect();
      await admin.ping();
      break;
    } catch (error) {
      admin.disconnect();
      if (attempt > 300 || child.exitCode !== null) {
        await stop();
        throw new Error(`redis-server under callgrind did not answer on port ${port}: ${String(error)}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  return { port, pid, admin, dump: () => dumpCounters(dir, name, pid), zero: () => zeroCounters(pid), stop, kill: () => void child.kill('SIGKILL') };
}

/** Every dump file still on disk (callgrind's output files are large: the bench removes them at the end). */
export const callgrindFiles = (dir: string) => (existsSync(dir) ? readdirSync(dir).map((f) => join(dir, f)) : []);
