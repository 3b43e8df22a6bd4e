// Which core each process of a throughput run gets: the server under test one of its own, the load generator and redis-server the other (taskset).
//
// Why: on a 2-core machine an unpinned server shares its core with autocannon and redis-server
// whenever the scheduler moves them, and req/s then moves by 10-15% from run to run. Pinned, the
// server's core does nothing else the bench starts, so its req/s and its CPU per request hold
// still (other processes on the machine can still run there: the report prints the load average).
import { execFileSync } from 'node:child_process';
import * as os from 'node:os';

export interface Pinning {
  /** True when processes are pinned; false: the fallback (no taskset, or a single core). */
  pinned: boolean;
  /** The server under test's cores, as taskset's list ('1'); undefined when not pinned. */
  serverCpus?: string;
  /** The bench process (autocannon) and redis-server's cores ('0'). */
  loadCpus?: string;
  /** How it was done, or why not, in words for the report. */
  how: string;
}

let hasTaskset: boolean | undefined;

/** taskset (util-linux) on the PATH. */
export function tasksetAvailable(): boolean {
  if (hasTaskset === undefined) {
    try {
      execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' });
      hasTaskset = true;
    } catch {
      hasTaskset = false;
    }
  }
  return hasTaskset;
}

/**
 * The plan for this machine: the last core for the server, every other core for the load
 * generator and Redis. `want` false (--no-pin) or no taskset or one core: nothing pinned, and the
 * report says so (ratios are then paired by round only, as before).
 */
export function planPinning(want: boolean, cores = os.cpus().length): Pinning {
  if (!want) return { pinned: false, how: 'not pinned (--no-pin): the scheduler placed every process' };
  if (cores < 2) return { pinned: false, how: `not pinned: ${cores} core, nothing to separate` };
  if (!tasksetAvailable()) return { pinned: false, how: 'not pinned: taskset (util-linux) is not on the PATH; install it to pin' };
  const server = String(cores - 1);
  const load = cores === 2 ? '0' : `0-${cores - 2}`;
  return {
    pinned: true,
    serverCpus: server,
    loadCpus: load,
    how: `pinned with taskset: the server under test on core ${server}, the bench process (autocannon) and redis-server on core${cores === 2 ? '' : 's'} ${load}`,
  };
}

/** Pins a running process, every thread of it (`taskset -a -p`), to `cpus`. */
export function pinPid(pid: number, cpus: string): void {
  execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' });
}

/** The command that starts `file args` on `cpus` (taskset execs it: the pid stays the program's), or as it is. */
export function pinnedCommand(cpus: string | undefined, file: string, args: string[]): { file: string; args: string[] } {
  return cpus === undefined ? { file, args } : { file: 'taskset', args: ['-c', cpus, file, ...args] };
}
