// Child process: decisions per second from Node against Redis, through Floodgate's core or a raw ioredis EVALSHA.
import { Redis } from 'ioredis';
import { RedisStore, createLimiter, type AlgorithmName } from '@floodgate/core';
import { admitLimits } from './admit';
import { scriptCall } from './script-call';

export interface CoreWorkerJob {
  port: number;
  algorithm: AlgorithmName;
  /** 'core': limiter.consume(); 'ioredis': client.evalsha of the same script, same arguments. */
  via: 'core' | 'ioredis';
  seconds: number;
  warmupSeconds: number;
  /** Calls in flight at once (as redis-benchmark's clients). */
  concurrency: number;
  prefix: string;
}

async function run(job: CoreWorkerJob): Promise<{ rps: number; calls: number; admitted: number }> {
  const client = new Redis({ host: '127.0.0.1', port: job.port, maxRetriesPerRequest: 1, autoResendUnfulfilledCommands: false });
  const windowMs = 3_600_000;
  const limit = 1_000_000_000;
  let call: () => Promise<unknown>;
  // Decisions the store made and admitted (core only; a raw EVALSHA counts as one).
  let admitted = 0;
  if (job.via === 'core') {
    const limits = admitLimits(job.algorithm, limit, windowMs);
    const limiter = createLimiter({ store: new RedisStore({ client, timeoutMs: 1_000 }), algorithm: job.algorithm, ...limits, prefix: job.prefix });
    // A capped limit (sliding-window-log: 10,000 per second) would turn most calls into denials from
    // the block cache, which never reach Redis: a fresh subject every 5,000 calls keeps every call
    // an admitted decision made by Redis.
    const rotate = limits.limit < limit;
    let calls = 0;
    call = () =>
      limiter.consume(rotate ? `subject-${Math.floor(calls++ / 5_000)}` : 'one-subject').then((d) => {
        if (d.allowed && !d.degraded) admitted++;
      });
  } else {
    const script = scriptCall(job.algorithm, limit, windowMs, `${job.prefix}:{ioredis}:default`);
    await client.script('LOAD', script.source);
    call = () => client.evalsha(...script.evalsha);
  }
  const loop = async (until: number, count: { n: number }) => {
    while (Date.now() < until) {
      await call();
      count.n++;
    }
  };
  const drive = async (seconds: number) => {
    const count = { n: 0 };
    admitted = 0;
    const started = Date.now();
    const until = started + seconds * 1000;
    await Promise.all(Array.from({ length: job.concurrency }, () => loop(until, count)));
    return { calls: count.n, rps: count.n / ((Date.now() - started) / 1000), admitted: job.via === 'core' ? admitted : count.n };
  };
  await drive(job.warmupSeconds);
  const result = await drive(job.seconds);
  client.disconnect();
  return result;
}

process.on('disconnect', () => process.exit(0));
// Exit cleanly on SIGTERM, so that a run under --cpu-prof writes its profile.
process.on('SIGTERM', () => process.exit(0));
run(JSON.parse(process.argv[2] ?? '{}') as CoreWorkerJob).then(
  (result) => process.send?.({ type: 'done', ...result }, () => process.exit(0)),
  (error: Error) => process.send?.({ type: 'error', message: error.stack ?? error.message }, () => process.exit(1)),
);
