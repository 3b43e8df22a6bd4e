// Hot-key mode across processes: three instances hammer one subject on a real Redis; admissions vs the bound, store calls from INFO commandstats.
import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { startRedis, type RedisServer } from '@floodgate/testing';
import type { CreateLimiterOptions } from '../src';
import type { WorkerJob, WorkerResult } from './hot-key-worker';

const INSTANCES = 3;
const LIMIT = 3_000;
const REQUESTS_PER_INSTANCE = 1_500; // 4,500 in all: 1.5 x the limit
const ROOT = join(__dirname, '..', '..', '..');

let server: RedisServer;
let workers: ChildProcess[] = [];
const run = Math.random().toString(36).slice(2, 8);
const report: string[] = [];

function startWorker(): Promise<ChildProcess> {
  // The TypeScript sources compiled by SWC on require, with the race test's register hook.
  const child = fork(join(__dirname, 'hot-key-worker.ts'), [], {
    cwd: ROOT,
    execArgv: ['-r', join(__dirname, 'race', 'swc-register.js')],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.once('message', (m) => (m === 'ready' ? resolve(child) : reject(new Error(`worker said ${JSON.stringify(m)}`))));
    child.once('exit', (code) => reject(new Error(`worker exited with ${code} before it was ready`)));
  });
}

function runJob(worker: ChildProcess, job: WorkerJob): Promise<WorkerResult> {
  return new Promise((resolve, reject) => {
    worker.once('message', (m: { result?: WorkerResult; error?: string }) => (m.result ? resolve(m.result) : reject(new Error(m.error))));
    worker.send(job);
  });
}

interface Measured {
  admitted: number;
  requests: number;
  storeCalls: number;
  degraded: string[];
}

/** Every instance sends its requests at once; store calls are Redis's own count of EVALSHA + EVAL. */
async function hammer(name: string, limiter: WorkerJob['limiter']): Promise<Measured> {
  await server.resetStats();
  const prefix = `${run}-${name}`;
  const results = await Promise.all(
    workers.map((w) =>
      runJob(w, { port: server.port, prefix, subject: 'hot', requests: REQUESTS_PER_INSTANCE, concurrency: 16, limiter }),
    ),
  );
  const stats = await server.commandStats();
  return {
    admitted: results.reduce((n, r) => n + r.admitted, 0),
    requests: INSTANCES * REQUESTS_PER_INSTANCE,
    storeCalls: (stats.evalsha ?? 0) + (stats.eval ?? 0),
    degraded: results.flatMap((r) => r.degraded),
  };
}

const per1000 = (m: Measured) => (1000 * m.storeCalls) / m.requests;

beforeAll(async () => {
  [server, ...workers] = await Promise.all([startRedis(), ...Array.from({ length: INSTANCES }, startWorker)]);
}, 60_000);

afterAll(async () => {
  await Promise.all(
    workers.map(
      (w) =>
        new Promise<void>((resolve) => {
          if (w.exitCode !== null || w.signalCode !== null) return resolve();
          const timer = setTimeout(() => w.kill('SIGKILL'), 5_000);
          w.once('exit', () => {
            clearTimeout(timer);
            resolve();
          });
          if (w.connected) w.send('exit');
          else w.kill('SIGKILL');
        }),
    ),
  );
  await server?.stop();
  if (process.env.FLOODGATE_PRINT_MEASUREMENTS) console.log(report.join('\n'));
});

const cases: [string, CreateLimiterOptions, number][] = [
  // name, limit, documented over-admission bound in hot-key mode during one window
  ['sliding-window-counter', { algorithm: 'sliding-window-counter', limit: LIMIT, windowMs: '1d' }, 0],
  ['fixed-window', { algorithm: 'fixed-window', limit: LIMIT, windowMs: '1d' }, 0],
  // Refill negligible during the run: the bucket is a budget of `burst`; the bound is instances x leaseSize.
  ['token-bucket', { algorithm: 'token-bucket', burst: LIMIT, refillPerSecond: 0.001 }, INSTANCES * (LIMIT / INSTANCES / 10)],
];

describe(`hot-key mode: ${INSTANCES} processes, one subject, limit ${LIMIT}, ${INSTANCES * REQUESTS_PER_INSTANCE} requests`, () => {
  it.each(cases)('%s: within the bound, with far fewer store calls', async (name, limit, bound) => {
    const n = cases.findIndex((c) => c[0] === name);
    const off = await hammer(`${n}-off`, limit);
    const on = await hammer(`${n}-on`, { ...limit, hotKeys: { instances: INSTANCES } });
    const leaseSize = LIMIT / INSTANCES / 10; // the default
    report.push(
      `${name}: off admitted=${off.admitted} (over ${off.admitted - LIMIT}) store calls/1000 requests=${per1000(off).toFixed(1)} | ` +
        `on admitted=${on.admitted} (over ${on.admitted - LIMIT}, bound ${bound}) store calls/1000 requests=${per1000(on).toFixed(1)}`,
    );
    expect(off.degraded).toEqual([]);
    expect(on.degraded).toEqual([]);
    expect(off.admitted).toBe(LIMIT);
    expect(on.admitted).toBeLessThanOrEqual(LIMIT + bound);
    // Under-admission: at most the leases still held when the run ends, one per instance.
    expect(on.admitted).toBeGreaterThanOrEqual(LIMIT - INSTANCES * leaseSize);
    expect(per1000(on)).toBeLessThan(per1000(off) / 5);
  }, 60_000);
});
