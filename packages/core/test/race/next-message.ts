// The parent's side of the race protocol: wait for one message of a type from a forked child.
import type { ChildProcess } from 'node:child_process';
import type { RaceReply } from './race-child';

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
