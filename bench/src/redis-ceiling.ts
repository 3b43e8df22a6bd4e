// The Redis ceiling: redis-benchmark EVALSHA of Floodgate's script vs Node (raw ioredis, then core) on one subject.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { AlgorithmName } from '@floodgate/core';
import type { RedisServer } from '@floodgate/testing';
import { spawnChild } from './children';
import type { CoreWorkerJob } from './core-worker';
import type { Progress } from './progress';
import { ratio } from './stats';
import { scriptCall } from './script-call';
import type { RedisCeilingRow } from './types';

const run = promisify(execFile);

export interface CeilingSettings {
  algorithms: readonly AlgorithmName[];
  seconds: number;
  warmupSeconds: number;
  connections: number;
}

/** Requests per second from `redis-benchmark --csv` output ("test","rps",... then one row per test). */
export function parseRedisBenchmarkCsv(text: string): number {
  for (const line of text.split('\n')) {
    const cells = line.split('","').map((c) => c.replace(/^"|"$/g, ''));
    if (cells.length >= 2 && cells[0] !== 'test') {
      const rps = Number(cells[1]);
      if (Number.isFinite(rps) && rps > 0) return rps;
    }
  }
  throw new Error(`no rps in redis-benchmark output:\n${text}`);
}

async function redisBenchmark(port: number, requests: number, connections: number, pipeline: number, args: (string | number)[]): Promise<number> {
  const { stdout } = await run(
    'redis-benchmark',
    ['-h', '127.0.0.1', '-p', String(port), '-c', String(connections), '-P', String(pipeline), '-n', String(requests), '--csv', 'EVALSHA', ...args.map(String)],
    { timeout: 120_000 },
  );
  return parseRedisBenchmarkCsv(stdout);
}

async function nodeRps(job: CoreWorkerJob): Promise<{ rps: number; admittedShare: number }> {
  type Reply = { type: 'done'; rps: number; calls: number; admitted: number } | { type: 'error'; message: string };
  const child = await spawnChild<Reply>('core-worker', [JSON.stringify(job)], {
    name: `core-${job.via}-${job.algorithm}`,
    timeoutMs: 30_000 + (job.seconds + job.warmupSeconds) * 1000,
  });
  await child.stop();
  if (child.first.type !== 'done') throw new Error(child.first.message);
  return { rps: child.first.rps, admittedShare: child.first.calls > 0 ? child.first.admitted / child.first.calls : 0 };
}

export async function runRedisCeiling(redis: RedisServer, settings: CeilingSettings, progress: Progress): Promise<RedisCeilingRow[]> {
  const rows: RedisCeilingRow[] = [];
  for (const algorithm of settings.algorithms) {
    const prefix = `fgbceil-${algorithm.replace(/[^a-z]/g, '').slice(0, 16)}`;
    const script = scriptCall(algorithm, 1_000_000_000, 3_600_000, `${prefix}:{redis-benchmark}:default`);
    const client = redis.client();
    await client.script('LOAD', script.source);
    client.disconnect();
    const args = script.evalsha;

    progress.step(`redis ceiling: redis-benchmark EVALSHA ${algorithm}`, (2 * settings.seconds + 1) * 1000);
    // A short probe sizes the measured run so that it lasts about `seconds`.
    const sized = async (connections: number, pipeline: number) => {
      const probe = await redisBenchmark(redis.port, 5_000, connections, pipeline, args);
      return redisBenchmark(redis.port, Math.max(10_000, Math.round(probe * settings.seconds)), connections, pipeline, args);
    };
    const benchmarkRps = await sized(settings.connections, 1);
    // One connection with the same number in flight: how a Node process's single client uses Redis.
    const pipelinedRps = await sized(1, settings.connections);

    const job = { port: redis.port, algorithm, seconds: settings.seconds, warmupSeconds: settings.warmupSeconds, concurrency: settings.connections, prefix };
    progress.step(`redis ceiling: raw ioredis EVALSHA ${algorithm}`, (settings.seconds + settings.warmupSeconds) * 1000);
    const ioredisRps = (await nodeRps({ ...job, via: 'ioredis' })).rps;
    progress.step(`redis ceiling: Floodgate core consume() ${algorithm}`, (settings.seconds + settings.warmupSeconds) * 1000);
    const core = await nodeRps({ ...job, via: 'core' });
    const coreRps = core.rps;
    rows.push({
      algorithm,
      redisBenchmarkRps: Math.round(benchmarkRps),
      redisBenchmarkPipelinedRps: Math.round(pipelinedRps),
      ioredisRps: Math.round(ioredisRps),
      coreRps: Math.round(coreRps),
      coreAdmittedShare: core.admittedShare,
      // The ceiling is the most this Redis was seen to do, whichever client drove it.
      ratio: ratio(coreRps, Math.max(benchmarkRps, pipelinedRps, ioredisRps)),
      connections: settings.connections,
    });
  }
  return rows;
}
