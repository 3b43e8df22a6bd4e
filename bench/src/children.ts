// Child processes of the bench: servers under load and workers, each a separate Node process, always reaped.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OUT_DIR } from './build';
import { BENCH_DIR } from './env';
import { pinnedCommand } from './pinning';
import { procCpuUs } from './proc-cpu';
import type { ServerSpec, Wiring } from './types';

const live = new Set<ChildProcess>();
let logDir: string | undefined;

/** Where children's stdout/stderr go (one file each), kept after the run for post-mortems. */
export function childLogDir(): string {
  logDir ??= mkdtempSync(join(tmpdir(), 'floodgate-bench-'));
  return logDir;
}

/** Kills every child still running (SIGKILL): used on exit, on the watchdog and on Ctrl-C. */
export function killAllChildren(): void {
  for (const child of live) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  live.clear();
}

export interface SpawnOptions {
  /** Extra node flags, e.g. ['--expose-gc'] or ['--cpu-prof', '--cpu-prof-dir=DIR']. */
  nodeArgs?: string[];
  /** Longest wait for the child's first message. Default 30 s (a shared, busy machine starts slowly). */
  timeoutMs?: number;
  name: string;
  /** Where the compiled entry is: dist/ (default), or another checkout's build (dist-against/). */
  dir?: string;
  /** Cores to run on (taskset's list, e.g. '1'); undefined: wherever the scheduler puts it. */
  cpus?: string;
  /** A command the node process runs under, e.g. ['valgrind', '--tool=callgrind'] (the pid stays the child's: valgrind runs in place). */
  wrapper?: readonly string[];
}

export interface Child<M> {
  readonly process: ChildProcess;
  readonly first: M;
  readonly logFile: string;
  /** Resolves with the next IPC message. */
  next(timeoutMs?: number): Promise<M>;
  send(message: unknown): void;
  /** SIGTERM (children exit cleanly on it, writing any --cpu-prof), SIGKILL after 5 s. */
  stop(): Promise<void>;
}

/**
 * Runs a child entry (src/<entry>.ts, compiled by buildChildren() to dist/<entry>.js) as a Node
 * process with IPC; resolves at its first message.
 */
export async function spawnChild<M>(entry: string, args: string[], options: SpawnOptions): Promise<Child<M>> {
  const logFile = join(childLogDir(), `${options.name.replace(/[^\w.-]+/g, '_')}-${Date.now()}.log`);
  const fd = openSync(logFile, 'a');
  let child: ChildProcess;
  try {
    const nodeArgs = [...(options.nodeArgs ?? []), join(options.dir ?? OUT_DIR, `${entry}.js`), ...args];
    const [file, ...wrapperArgs] = options.wrapper ?? [process.execPath];
    const command = pinnedCommand(options.cpus, file, options.wrapper ? [...wrapperArgs, process.execPath, ...nodeArgs] : nodeArgs);
    child = spawn(command.file, command.args, {
      cwd: BENCH_DIR,
      stdio: ['ignore', fd, fd, 'ipc'],
      env: { ...process.env, NODE_ENV: 'production' },
    });
  } finally {
    closeSync(fd);
  }
  live.add(child);
  child.on('exit', () => live.delete(child));
  const queue: M[] = [];
  const waiters: ((m: M) => void)[] = [];
  child.on('message', (m: M) => {
    const waiter = waiters.shift();
    if (waiter) waiter(m);
    else queue.push(m);
  });
  const next = (timeoutMs = options.timeoutMs ?? 30_000): Promise<M> => {
    const queued = queue.shift();
    if (queued !== undefined) return Promise.resolve(queued);
    return new Promise<M>((resolve, reject) => {
      const fail = (why: string) => {
        clearTimeout(timer);
        child.off('exit', onExit);
        const log = tail(logFile);
        reject(new Error(`${options.name}: ${why}\n${log}`));
      };
      const onExit = (code: number | null, signal: string | null) => fail(`exited (code ${code}, signal ${signal})`);
      const timer = setTimeout(() => fail(`no message within ${timeoutMs} ms`), timeoutMs);
      child.once('exit', onExit);
      waiters.push((m) => {
        clearTimeout(timer);
        child.off('exit', onExit);
        resolve(m);
      });
    });
  };
  const first = await next().catch((error: Error) => {
    child.kill('SIGKILL');
    throw error;
  });
  return {
    process: child,
    first,
    logFile,
    next,
    send: (message) => child.send?.(message as never),
    stop: () => stopChild(child),
  };
}

function tail(file: string): string {
  try {
    const text = readFileSync(file, 'utf8');
    return text.length > 2_000 ? text.slice(-2_000) : text;
  } catch {
    return '';
  }
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

type ServerMessage =
  | { type: 'ready'; port: number; wiring: Wiring }
  | { type: 'error'; message: string }
  | { type: 'mark'; monotonicUs: number }
  | { type: 'usage'; cpuUs: number };

export interface RunningServer {
  /** The child's stdout and stderr. */
  readonly logFile: string;
  readonly url: string;
  readonly port: number;
  readonly pid: number;
  readonly wiring: Wiring;
  /** The server's monotonic clock in µs (the clock of its CPU profile's timestamps). */
  mark(): Promise<number>;
  /**
   * CPU time (user + system) the server has used, in µs: from /proc/<pid>/stat (every thread, and
   * children it reaped), read by the bench without disturbing the server; where /proc cannot tell,
   * the server's own process.cpuUsage() over IPC.
   */
  cpuUs(): Promise<number>;
  stop(): Promise<void>;
}

/** Starts src/server.ts with this spec and waits until it listens. */
export async function startServer(
  spec: ServerSpec,
  name: string,
  nodeArgs: string[] = [],
  cpus?: string,
  extra: Pick<SpawnOptions, 'wrapper' | 'timeoutMs' | 'dir'> = {},
): Promise<RunningServer> {
  const child = await spawnChild<ServerMessage>('server', [JSON.stringify(spec)], { name, nodeArgs, cpus, ...extra });
  const first = child.first;
  if (first.type !== 'ready') {
    await child.stop();
    throw new Error(`${name} failed to start: ${first.type === 'error' ? first.message : JSON.stringify(first)}`);
  }
  return {
    logFile: child.logFile,
    url: `http://127.0.0.1:${first.port}`,
    port: first.port,
    pid: child.process.pid ?? -1,
    wiring: first.wiring,
    async mark() {
      child.send({ type: 'mark' });
      const reply = await child.next(10_000);
      if (reply.type !== 'mark') throw new Error(`${name}: unexpected reply ${JSON.stringify(reply)}`);
      return reply.monotonicUs;
    },
    async cpuUs() {
      const fromProc = child.process.pid === undefined ? undefined : procCpuUs(child.process.pid);
      if (fromProc !== undefined) return fromProc;
      child.send({ type: 'usage' });
      const reply = await child.next(10_000);
      if (reply.type !== 'usage') throw new Error(`${name}: unexpected reply ${JSON.stringify(reply)}`);
      return reply.cpuUs;
    },
    stop: () => child.stop(),
  };
}
