// Runs a command (an example's one command) as a child process: waits for a line, lists its process tree, signals it, waits for its exit.
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

export interface RunningCommand {
  readonly child: ChildProcess;
  /** Everything written to stdout and stderr so far. */
  output(): string;
  /** Resolves with the first match of `pattern` in the output; rejects if the process exits first or after `timeoutMs`. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Pids of every live descendant of the child (Linux /proc), the child included. */
  tree(): number[];
  /** Resolves with the exit code and signal once the child has exited (immediately if it has). */
  exited(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /**
   * Sends `signal` to the child alone (as a terminal or a supervisor would), waits for it to exit,
   * then up to `graceMs` for every process that was in its tree. Resolves with the survivors' pids
   * (expected: none); survivors are then SIGKILLed so a failing test leaves nothing behind.
   */
  terminate(signal: NodeJS.Signals, graceMs?: number): Promise<number[]>;
}

/** Parent pid of each live process, from /proc. */
function parents(): Map<number, number> {
  const map = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // The command name (field 2) may hold spaces and parentheses: the fields after its last ')' are fixed.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const after = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (after[0] !== 'Z') map.set(Number(entry), Number(after[1]));
    } catch {
      // exited while we looked
    }
  }
  return map;
}

/** Whether `pid` is a live (non-zombie) process. */
export function isProcessAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** The environment of a fresh machine for an example's one command: no REDIS_URL, PORT=0 (any free port), then `extra`. */
export function freshMachineEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0' };
  delete env.REDIS_URL;
  return { ...env, ...extra };
}

/** Spawns `command args` with its own output captured. The caller ends it (signal + exited()). */
export function runCommand(command: string, args: readonly string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): RunningCommand {
  const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer): void => {
    text += chunk.toString();
    for (const listener of listeners) listener();
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      for (const listener of listeners) listener();
      resolve({ code, signal });
    });
    child.once('error', () => resolve({ code: null, signal: null }));
  });
  return {
    child,
    output: () => text,
    waitFor(pattern, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          const match = text.match(pattern);
          if (match) done(() => resolve(match));
          else if (child.exitCode !== null || child.signalCode !== null)
            done(() => reject(new Error(`${command} exited before printing ${pattern}. Output:\n${text}`)));
        };
        const timer = setTimeout(() => done(() => reject(new Error(`${command} did not print ${pattern} within ${timeoutMs} ms. Output:\n${text}`))), timeoutMs);
        const done = (settle: () => void): void => {
          clearTimeout(timer);
          listeners.delete(check);
          settle();
        };
        listeners.add(check);
        check();
      });
    },
    tree() {
      const map = parents();
      const found = [child.pid!];
      for (let i = 0; i < found.length; i++) {
        for (const [pid, ppid] of map) if (ppid === found[i]) found.push(pid);
      }
      return found.filter((pid) => map.has(pid));
    },
    exited: () => exit,
    async terminate(signal, graceMs = 10_000) {
      const before = this.tree();
      child.kill(signal);
      const deadline = Date.now() + graceMs;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([exit, new Promise((resolve) => (timer = setTimeout(resolve, graceMs)))]);
      clearTimeout(timer);
      let alive = before.filter(isProcessAlive);
      while (alive.length > 0 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        alive = alive.filter(isProcessAlive);
      }
      for (const pid of alive) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone meanwhile
        }
      }
      return alive;
    },
  };
}

export interface StartedExample {
  readonly run: RunningCommand;
  /** http://127.0.0.1:PORT, as the example printed it. */
  readonly url: string;
  /** Pid of the redis-server the example started for itself. */
  readonly redisPid: number;
}

/**
 * Runs an example's one command, `pnpm --filter <pkg> start` from the repository `root`, as on a
 * fresh machine (freshMachineEnv), and waits until it prints `<name> on <url>` and the redis-server
 * it started. The caller ends it with `run.terminate(...)`; on a startup failure it is killed here.
 */
export async function startExample(root: string, pkg: string, name: string, env: Readonly<Record<string, string>> = {}): Promise<StartedExample> {
  // `env`: the example's own settings (e.g. nestjs-api's PLATFORM) over the fresh machine's.
  // REDIS_TIMEOUT_MS: the examples' RedisStore waits 30 s, not the production 100 ms, so that a loaded
  // machine's slow answer is counted by Redis, not decided by the failure policy (a test may override it).
  const run = runCommand('pnpm', ['--filter', pkg, 'start'], { cwd: root, env: { ...freshMachineEnv(), REDIS_TIMEOUT_MS: '30000', ...env } });
  try {
    const [, url] = await run.waitFor(new RegExp(`${name} on (http://127\\.0\\.0\\.1:\\d+)`));
    const [, pid] = await run.waitFor(/redis-server started for this run \(pid (\d+)\)/);
    return { run, url, redisPid: Number(pid) };
  } catch (error) {
    await run.terminate('SIGKILL', 2_000);
    throw error;
  }
}
