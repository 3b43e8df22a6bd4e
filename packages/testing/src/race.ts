// The parent's side of a race between processes: fork the children, read their typed messages, hold Redis still until all have sent, stop them.
import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { whilePaused } from './faults';

/** What every race child answers with: a typed message, 'error' carrying a message. */
export interface RaceMessage {
  readonly type: string;
  readonly message?: string;
}

/** What a child's 'done' reports, for the span all requests were in flight together. */
export interface RaceTimes {
  readonly lastSentAt: number;
  readonly firstReplyAt: number;
}

/**
 * A `next` for children that answer with messages of type R: the next message of `type` from a
 * child, or a failure naming the child (its 'error' message, its exit, or the timeout).
 */
export function raceMessages<R extends RaceMessage>() {
  return function next<T extends R['type']>(child: ChildProcess, type: T, timeoutMs: number): Promise<Extract<R, { type: T }>> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => finish(new Error(`child ${child.pid}: no '${type}' within ${timeoutMs} ms`)), timeoutMs);
      const onMessage = (message: R) => {
        if (message.type === 'error') finish(new Error(`child ${child.pid}: ${message.message}`));
        else if (message.type === type) finish(undefined, message as Extract<R, { type: T }>);
      };
      const onExit = (code: number | null) => finish(new Error(`child ${child.pid} exited (${code}) before '${type}'`));
      function finish(error?: Error, message?: Extract<R, { type: T }>) {
        clearTimeout(timer);
        child.off('message', onMessage);
        child.off('exit', onExit);
        if (error) reject(error);
        else resolve(message!);
      }
      child.on('message', onMessage);
      child.on('exit', onExit);
    });
  };
}

export interface ForkRaceOptions {
  /** The child's entry file (TypeScript, run through `register`). */
  entry: string;
  /** A `-r` hook that compiles TypeScript on require (SWC), and any other node flags (e.g. '--conditions=source'). */
  execArgv: string[];
  /** Working directory: the repository root, so workspace packages resolve. */
  cwd: string;
  /** Sent to each child once forked; the child answers 'ready'. */
  setup: unknown;
  /** Longest wait for each 'ready'. Default 40 s (a loaded machine loads TypeScript slowly). */
  readyMs?: number;
}

/** Forks `count` race children and waits until each has answered its setup with 'ready'. */
export async function forkRaceChildren(count: number, options: ForkRaceOptions): Promise<ChildProcess[]> {
  const next = raceMessages<RaceMessage>();
  const children = Array.from({ length: count }, () =>
    fork(options.entry, [], { cwd: options.cwd, execArgv: options.execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
  );
  await Promise.all(
    children.map((child) => {
      const ready = next(child, 'ready', options.readyMs ?? 40_000);
      child.send(options.setup as object);
      return ready;
    }),
  );
  return children;
}

/** Asks each child to exit; kills it if it has not within 5 s. */
export async function stopRaceChildren(children: readonly ChildProcess[]): Promise<void> {
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
          child.once('exit', () => {
            clearTimeout(timer);
            resolve();
          });
          if (child.connected) child.send({ type: 'exit' });
          else child.kill('SIGKILL');
        }),
    ),
  );
}

/** What the parent holds still while the children send: the redis-server (or the Cluster master) of the round's subject. */
export interface Pausable {
  pause(): void;
  resume(): void;
  /** Its process id, when it runs here: the barrier then checks that it really stood still. */
  readonly pid?: number;
}

/** The process's state letter from /proc (Linux): 'T' is stopped by a signal; undefined where /proc is not readable. */
function processState(pid: number): string | undefined {
  try {
    // The state follows the command name, which is in parentheses and may itself hold spaces.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return undefined;
  }
}

/** Resolves once `pid` is stopped (SIGSTOP takes effect when the kernel next schedules it), checked every turn of the event loop. */
async function untilStopped(pid: number, timeoutMs = 10_000): Promise<void> {
  const started = performance.now();
  for (let state = processState(pid); state !== undefined && state !== 'T'; state = processState(pid)) {
    if (performance.now() - started > timeoutMs) throw new Error(`race barrier: process ${pid} is still '${state}' ${timeoutMs} ms after SIGSTOP`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/**
 * One round with a start barrier: Redis is stopped (SIGSTOP), every child gets `go` and makes all
 * its requests (their script calls wait, written, in Redis' sockets), and only when every child
 * has said 'sent' does Redis run again (SIGCONT) and meet them all at once. Without the barrier,
 * on a machine with fewer cores than children, one child can send and be answered before another
 * has started, and the "race" is a queue. Where `redis.pid` is known, the barrier is checked, not
 * assumed: `go` goes out only once the process is seen stopped, and the round fails unless it is
 * still stopped when the last 'sent' arrives (no clock is compared). Resolves with every child's 'done'.
 */
export async function raceRound<R extends RaceMessage>(
  children: readonly ChildProcess[],
  go: object,
  redis: Pausable,
  timeouts: { sentMs: number; doneMs: number } = { sentMs: 40_000, doneMs: 60_000 },
): Promise<Extract<R, { type: 'done' }>[]> {
  const next = raceMessages<R>();
  const pid = redis.pid;
  let done: Promise<Extract<R, { type: 'done' }>>[] = [];
  await whilePaused(redis, async () => {
    if (pid !== undefined) await untilStopped(pid);
    const replies = children.map((child) => ({ sent: next(child, 'sent', timeouts.sentMs), done: next(child, 'done', timeouts.doneMs) }));
    // A child that fails before 'sent' fails both; the first rejection is the one reported.
    for (const r of replies) r.done.catch(() => undefined);
    for (const child of children) child.send(go);
    await Promise.all(replies.map((r) => r.sent));
    const state = pid === undefined ? undefined : processState(pid);
    if (state !== undefined && state !== 'T') throw new Error(`race barrier: process ${pid} was running ('${state}') before every child had sent`);
    done = replies.map((r) => r.done);
  });
  return Promise.all(done);
}

/**
 * Whether every request of every process was in flight at once: behind raceRound's barrier (Redis
 * held stopped until every child had sent), no answer can come before the last send anywhere, and
 * each child confirms it on its own clock: its first answer came after its own last send. Nothing
 * here compares one process's clock with another's.
 */
export function allInFlightTogether(done: readonly RaceTimes[]): boolean {
  return done.length > 0 && done.every((d) => d.firstReplyAt >= d.lastSentAt);
}

/**
 * For the report only, never asserted: from the last child's last send to the first answer any
 * child got, in ms on the machine's monotonic clock (the race children read process.hrtime, one
 * clock for every process on the machine); allInFlightTogether is the check.
 */
export function inFlightTogetherMs(done: readonly RaceTimes[]): number {
  return Math.min(...done.map((d) => d.firstReplyAt)) - Math.max(...done.map((d) => d.lastSentAt));
}
