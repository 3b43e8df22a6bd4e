// RedisStore: every decision is one EVALSHA of one atomic script, on an ioredis Redis or Cluster.
import { createHash } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { ALGORITHM_ID, type LimitResult } from '../algorithms/types';
import { FloodgateError, invalidOption } from '../errors';
import { parseDuration } from '../duration';
import { LUA_SCRIPTS } from '../lua/scripts.generated';
import type { Store, StoreRequest, StoreResult } from './store';

type ScriptName = keyof typeof LUA_SCRIPTS;

/** Script hashes, computed once when the module loads, never kept by hand. */
const SCRIPTS = Object.fromEntries(
  Object.entries(LUA_SCRIPTS).map(([name, source]) => [
    name,
    { source, sha: createHash('sha1').update(source).digest('hex') },
  ]),
) as Record<ScriptName, { source: string; sha: string }>;

export interface RedisStoreOptions {
  /** An ioredis `Redis` or `Cluster` client. Floodgate never closes it. */
  client: Redis | Cluster;
  /**
   * Longest wait for one decision, in ms (or a duration string). Past it the call fails with
   * FG_STORE_TIMEOUT and is never retried: the script may already have counted. Default 100.
   */
  timeoutMs?: number | string;
  /**
   * TESTS ONLY. Replaces Redis `TIME` with this clock inside the scripts. Never set it in
   * production: the whole point of the scripts is that the application's clock is not trusted.
   */
  UNSAFE_testClock?: () => number;
}

// ioredis statuses in which a command cannot be answered soon: fail now instead of queueing.
const DOWN = new Set(['end', 'close', 'reconnecting']);

export class RedisStore implements Store {
  readonly name = 'redis';
  readonly timeoutMs: number;
  private readonly client: Redis | Cluster;
  private readonly testClock?: () => number;

  constructor(options: RedisStoreOptions) {
    if (!options || typeof options !== 'object') invalidOption('RedisStore', options, 'an options object { client }');
    const client = options.client as Partial<Redis> | undefined;
    if (!client || typeof client.evalsha !== 'function' || typeof client.eval !== 'function') {
      invalidOption('client', options.client, 'an ioredis Redis or Cluster instance');
    }
    this.client = options.client;
    this.timeoutMs = parseDuration('timeoutMs', options.timeoutMs ?? 100, 1, 60_000);
    if (options.UNSAFE_testClock !== undefined && typeof options.UNSAFE_testClock !== 'function') {
      invalidOption('UNSAFE_testClock', options.UNSAFE_testClock, 'a function returning ms');
    }
    this.testClock = options.UNSAFE_testClock;
  }

  evaluate(request: StoreRequest): Promise<StoreResult> {
    const first = request.limits[0].algorithm;
    const name: ScriptName = request.limits.every((l) => l.algorithm === first) ? first : 'all';
    const args: (string | number)[] = [
      request.mode === 'peek' ? 'p' : 'c',
      request.cost,
      this.testClock ? Math.floor(this.testClock()) : '',
    ];
    for (const limit of request.limits) {
      args.push(ALGORITHM_ID[limit.algorithm], limit.capacity, limit.period);
    }
    return this.withTimeout(this.run(name, request.keys, args)).then((reply) =>
      parseReply(reply, request.limits.length),
    );
  }

  async reset(keys: readonly string[]): Promise<void> {
    // One DEL per key: on a Cluster all keys of a subject share a slot, but be safe across subjects.
    await this.withTimeout(Promise.all(keys.map((key) => this.client.del(key))));
  }

  /** EVALSHA; on NOSCRIPT only, EVAL once (which also loads the script). Never retried otherwise. */
  private async run(name: ScriptName, keys: readonly string[], args: (string | number)[]): Promise<unknown> {
    const status = (this.client as { status?: string }).status;
    if (status !== undefined && DOWN.has(status)) {
      throw new FloodgateError('FG_STORE_UNAVAILABLE', `Redis connection is ${status}.`);
    }
    const script = SCRIPTS[name];
    try {
      return await this.client.evalsha(script.sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (error instanceof Error && error.message.startsWith('NOSCRIPT')) {
        return this.client.eval(script.source, keys.length, ...keys, ...args);
      }
      throw error;
    }
  }

  private withTimeout<T>(promise: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new FloodgateError('FG_STORE_TIMEOUT', `Redis did not answer within ${this.timeoutMs} ms.`));
      }, this.timeoutMs);
      promise.then(
        (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        (error) => {
          clearTimeout(timer);
          reject(error);
        },
      );
    });
  }
}

function parseReply(reply: unknown, n: number): StoreResult {
  if (!Array.isArray(reply) || reply.length !== 1 + 4 * n) {
    throw new FloodgateError('FG_STORE_REPLY', `Unexpected script reply: ${JSON.stringify(reply)}`);
  }
  const results: LimitResult[] = [];
  for (let i = 0; i < n; i++) {
    const o = 1 + 4 * i;
    results.push({
      allowed: reply[o] === 1,
      remaining: Number(reply[o + 1]),
      resetMs: Number(reply[o + 2]),
      retryAfterMs: Number(reply[o + 3]),
    });
  }
  return { allowed: reply[0] === 1, results };
}
