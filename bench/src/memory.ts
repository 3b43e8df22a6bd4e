// Memory per caller: Redis MEMORY USAGE per subject filled to its limit (Floodgate and peers), and the memory store's heap.
import { ALGORITHMS, RedisStore, createLimiter } from '@floodgate/core';
import { ALGORITHM } from '@floodgate/core/internal';
import type { RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import { spawnChild } from './children';
import type { MemoryWorkerJob, MemoryWorkerRow } from './memory-worker';
import type { Progress } from './progress';
import type { MemoryStoreRow, RedisMemoryRow } from './types';


const WINDOW_MS = 60_000;
/** Sum of MEMORY USAGE (exact: SAMPLES 0) over every key under this prefix. */
export async function prefixMemory(client: Redis, prefix: string): Promise<{ keys: number; bytes: number }> {
  let cursor = '0';
  let keys = 0;
  let bytes = 0;
  do {
    const [next, found] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    for (const key of found) {
      keys++;
      bytes += Number(await client.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));
    }
  } while (cursor !== '0');
  return { keys, bytes };
}

async function repeat(times: number, fn: () => Promise<unknown>): Promise<void> {
  for (let i = 0; i < times; i++) await fn();
}

/** One subject drawn to `limit` by each library, then measured. */
async function fillers(client: Redis, limit: number): Promise<{ library: string; algorithm: string; prefix: string; fill: () => Promise<void> }[]> {
  const list: { library: string; algorithm: string; prefix: string; fill: () => Promise<void> }[] = ALGORITHMS.map((algorithm) => {
    const prefix = `fgbmem-${ALGORITHM[algorithm].keySuffix}-${limit}`;
    const limiter = createLimiter({ store: new RedisStore({ client }), algorithm, limit, windowMs: WINDOW_MS, prefix });
    return { library: 'Floodgate', algorithm, prefix, fill: () => repeat(limit, () => limiter.consume('subject')) };
  });
  const { RedisStore: ErlRedisStore } = require('rate-limit-redis');
  const erl = new ErlRedisStore({ prefix: `fgbmem-erl-${limit}:`, sendCommand: (c: string, ...a: string[]) => client.call(c, ...a) });
  erl.init({ windowMs: WINDOW_MS });
  list.push({ library: 'express-rate-limit + rate-limit-redis', algorithm: 'fixed window', prefix: `fgbmem-erl-${limit}:`, fill: () => repeat(limit, () => erl.increment('subject')) });

  const { RateLimiterRedis } = require('rate-limiter-flexible');
  const rlf = new RateLimiterRedis({ storeClient: client, keyPrefix: `fgbmem-rlf-${limit}`, points: limit, duration: WINDOW_MS / 1000 });
  list.push({ library: 'rate-limiter-flexible', algorithm: 'fixed window', prefix: `fgbmem-rlf-${limit}`, fill: () => repeat(limit, () => rlf.consume('subject')) });

  // @fastify/rate-limit's own Redis store, as the plugin drives it.
  const FastifyRedisStore = require('@fastify/rate-limit/store/RedisStore');
  const frl = new FastifyRedisStore(false, false, client, `fgbmem-frl-${limit}-`);
  const incr = () => new Promise<void>((resolve, reject) => frl.incr('subject', (e: Error | null) => (e ? reject(e) : resolve()), WINDOW_MS, limit));
  list.push({ library: '@fastify/rate-limit', algorithm: 'fixed window', prefix: `fgbmem-frl-${limit}-`, fill: () => repeat(limit, incr) });

  const KoaRedisLimiter = require('koa-ratelimit/limiter/redis');
  const krl = new KoaRedisLimiter({ id: 'subject', db: client, max: limit, duration: WINDOW_MS, namespace: `fgbmem-krl-${limit}` });
  list.push({ library: 'koa-ratelimit', algorithm: 'sliding log', prefix: `fgbmem-krl-${limit}`, fill: () => repeat(limit, () => krl.get()) });
  return list;
}

export async function runRedisMemory(redis: RedisServer, limits: readonly number[], progress: Progress): Promise<RedisMemoryRow[]> {
  const client = redis.client({ autoResendUnfulfilledCommands: false });
  const rows: RedisMemoryRow[] = [];
  try {
    for (const limit of limits) {
      for (const f of await fillers(client, limit)) {
        progress.step(`memory: Redis, ${f.library} ${f.algorithm} at ${limit}/min`);
        await f.fill();
        const { keys, bytes } = await prefixMemory(client, f.prefix);
        rows.push({ library: f.library, algorithm: f.algorithm, limit, keys, bytes });
      }
    }
  } finally {
    client.disconnect();
  }
  return rows;
}

export async function runMemoryStore(job: MemoryWorkerJob, progress: Progress): Promise<{ rows: MemoryStoreRow[]; emptyStoreBytes: number; limiterBytes: number }> {
  progress.step(`memory: memory store heap over ${job.callers} callers (--expose-gc)`);
  type Reply = { type: 'done'; rows: MemoryWorkerRow[]; emptyStoreBytes: number; limiterBytes: number } | { type: 'error'; message: string };
  const child = await spawnChild<Reply>('memory-worker', [JSON.stringify(job)], {
    name: 'memory-worker',
    // One GC thread (no sweeping left to run after gc() returns) and no bytecode flushing (V8 drops
    // the bytecode of functions idle for a few GCs, which would show as heap freed between readings).
    nodeArgs: ['--expose-gc', '--single-threaded-gc', '--no-flush-bytecode'],
    timeoutMs: 300_000,
  });
  await child.stop();
  if (child.first.type !== 'done') throw new Error(child.first.message);
  return {
    rows: child.first.rows.map((r) => ({
      ...r,
      limit: job.limit,
      bytesPerCaller: Math.round(r.bytesPerCaller),
      samples: r.samples.map(Math.round),
      noiseBytes: Math.ceil(r.noiseBytes),
    })),
    emptyStoreBytes: child.first.emptyStoreBytes,
    limiterBytes: child.first.limiterBytes,
  };
}
