// Child process of hot-key-redis.test.ts: one application instance hammering one subject through its own limiter and connection.
import { Redis } from 'ioredis';
import { createLimiter, RedisStore, type CreateLimiterOptions } from '../src';

export interface WorkerJob {
  port: number;
  prefix: string;
  subject: string;
  requests: number;
  concurrency: number;
  limiter: Omit<CreateLimiterOptions, 'store' | 'prefix'>;
}

export interface WorkerResult {
  admitted: number;
  denied: number;
  degraded: string[];
}

let client: Redis | undefined;

process.on('message', (job: WorkerJob | 'exit') => {
  if (job === 'exit') {
    client?.disconnect();
    process.exit(0);
  }
  void runJob(job).then(
    (result) => process.send!({ result }),
    (error: unknown) => process.send!({ error: String((error as Error)?.stack ?? error) }),
  );
});

async function runJob(job: WorkerJob): Promise<WorkerResult> {
  client ??= new Redis({ host: '127.0.0.1', port: job.port, autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 1 });
  // One store call per request when hot-key mode is off (no coalescing): the baseline hot keys are measured against.
  const store = new RedisStore({ client, timeoutMs: 10_000, coalesce: false });
  const limiter = createLimiter({ ...job.limiter, store, prefix: job.prefix, logger: { warn() {}, error() {} } });
  const result: WorkerResult = { admitted: 0, denied: 0, degraded: [] };
  let left = job.requests;
  await Promise.all(
    Array.from({ length: job.concurrency }, async () => {
      while (left > 0) {
        left--;
        const d = await limiter.consume(job.subject);
        if (d.degraded) result.degraded.push(d.reason);
        if (d.allowed) result.admitted++;
        else result.denied++;
      }
    }),
  );
  return result;
}

// The test process went away (or said exit): never outlive it.
process.on('disconnect', () => process.exit(0));
process.send!('ready');
