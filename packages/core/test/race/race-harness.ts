// The parent's side of the race protocol: fork the race children, wait for their messages, stop them.
import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { whilePaused } from '@floodgate/testing';
import type { RaceGo, RaceReply, RaceSetup } from './race-child';

const REPO = join(__dirname, '..', '..', '..', '..');

/** The next message of `type` from a child, or a failure naming the child. */
export function next<T extends RaceReply['type']>(child: ChildProcess, type: T, timeoutMs: number): Promise<Extract<RaceReply, { type: T }>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => finish(new Error(`child ${child.pid}: no '${type}' within ${timeoutMs} ms`)), timeoutMs);
    const onMessage = (message: RaceReply) => {
      if (message.type === 'error') finish(new Error(`child ${child.pid}: ${message.message}`));
      else if (message.type === type) finish(undefined, message as Extract<RaceReply, { type: T }>);
    };
    const onExit = (code: number | null) => finish(new Error(`child ${child.pid} exited (${code}) before '${type}'`));
    function finish(error?: Error, message?: Extract<RaceReply, { type: T }>) {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
      if (error) reject(error);
      else resolve(message!);
    }
    child.on('message', onMessage);
    child.on('exit', onExit);
  });
}

/**
 * Forks `count` race children and waits until each has connected with `setup`. The child runs the
 * TypeScript sources compiled by SWC on require, as jest does (ts-node takes seconds per process to
 * load the TypeScript compiler; this takes a tenth of one).
 */
export async function startChildren(count: number, setup: RaceSetup): Promise<ChildProcess[]> {
  const children = Array.from({ length: count }, () =>
    fork(join(__dirname, 'race-child.ts'), [], {
      cwd: REPO,
      execArgv: ['-r', join(__dirname, 'swc-register.js')],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    }),
  );
  await Promise.all(
    children.map((child) => {
      const ready = next(child, 'ready', 40_000);
      child.send(setup);
      return ready;
    }),
  );
  return children;
}

/** Asks each child to exit; kills it if it has not within 5 s. */
export async function stopChildren(children: readonly ChildProcess[]): Promise<void> {
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
 * One round with a start barrier: Redis is stopped (SIGSTOP), every child makes all its requests
 * (their script calls wait, written, in Redis' sockets), and only when every child has said 'sent'
 * does Redis run again (SIGCONT) and meet them all at once. Without the barrier, on a machine with
 * fewer cores than children, one child can send and be answered before another has started, and
 * the "race" is a queue. Resolves with every child's 'done'.
 */
export async function raceRound(children: readonly ChildProcess[], go: RaceGo, redis: Pausable): Promise<Extract<RaceReply, { type: 'done' }>[]> {
  const replies = children.map((child) => ({ sent: next(child, 'sent', 40_000), done: next(child, 'done', 60_000) }));
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
export function inFlightTogetherMs(done: readonly Extract<RaceReply, { type: 'done' }>[]): number {
  return Math.min(...done.map((d) => d.firstReplyAt)) - Math.max(...done.map((d) => d.lastSentAt));
}

/** Script calls a coalesced child makes for `inFlight` requests made in one turn (RedisStore sends at most 64 per call). */
export const TURN_BATCH = 64;
