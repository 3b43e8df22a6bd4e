// CPU time of a process and its reaped children, read from /proc/<pid>/stat by the bench (not by the process itself).
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';

let ticksPerSecond: number | undefined;

/** The kernel's clock ticks per second (USER_HZ, `getconf CLK_TCK`): the unit of /proc/<pid>/stat's times. */
function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/**
 * utime + stime + cutime + cstime of /proc/<pid>/stat, in µs: every thread of the process (V8's
 * compiler and GC threads, libuv's pool) and the children it has waited for. Fields are counted
 * after the command name's closing ')', which may itself hold spaces. Undefined without /proc.
 */
export function parseProcStat(stat: string, ticks = clockTicks()): number | undefined {
  const close = stat.lastIndexOf(')');
  if (close < 0) return undefined;
  // After ')': field 3 (state) first, so utime (14) is at index 11.
  const fields = stat.slice(close + 2).split(' ');
  const [utime, stime, cutime, cstime] = fields.slice(11, 15).map(Number);
  if (![utime, stime, cutime, cstime].every(Number.isFinite)) return undefined;
  return ((utime + stime + cutime + cstime) * 1e6) / ticks;
}

/** The process's CPU time so far (and its children's), µs; undefined when /proc cannot tell (not Linux, or gone). */
export function procCpuUs(pid: number): number | undefined {
  try {
    return parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}
