// The parent's side of the race protocol: fork the race children, wait for their messages, stop them.
import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { RaceReply, RaceSetup } from './race-child';

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
