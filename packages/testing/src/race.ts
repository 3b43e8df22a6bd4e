// The parent's side of a race between processes: fork the children, read their typed messages, hold Redis still until all have sent, stop them.
import { fork, type ChildProcess } from 'node:child_process';
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
}

/**
 * One round with a start barrier: Redis is stopped (SIGSTOP), every child gets `go` and makes all
 * its requests (their script calls wait, written, in Redis' sockets), and only when every child
 * has said 'sent' does Redis run again (SIGCONT) and meet them all at once. Without the barrier,
 * on a machine with fewer cores than children, one child can send and be answered before another
 * has started, and the "race" is a queue. Resolves with every child's 'done'.
 */
export async function raceRound<R extends RaceMessage>(
  children: readonly ChildProcess[],
  go: object,
  redis: Pausable,
  timeouts: { sentMs: number; doneMs: number } = { sentMs: 40_000, doneMs: 60_000 },
): Promise<Extract<R, { type: 'done' }>[]> {
  const next = raceMessages<R>();
  const replies = children.map((child) => ({ sent: next(child, 'sent', timeouts.sentMs), done: next(child, 'done', timeouts.doneMs) }));
  // A child that fails before 'sent' fails both; the first rejection is the one reported.
  for (const r of replies) r.done.catch(() => undefined);
  await whilePaused(redis, async () => {
    for (const child of children) child.send(go);
    await Promise.all(replies.map((r) => r.sent));
  });
  return Promise.all(replies.map((r) => r.done));
}

/**
 * How long every request of every child was in flight at once: from the last child's last send to
 * the first answer any child got. Positive only if no child had an answer before all had sent.
 */
export function inFlightTogetherMs(done: readonly RaceTimes[]): number {
  return Math.min(...done.map((d) => d.firstReplyAt)) - Math.max(...done.map((d) => d.lastSentAt));
}
