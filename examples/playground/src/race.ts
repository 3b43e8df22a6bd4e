// The race panel's engine: many concurrent requests on one subject through the naive limiter and through Floodgate's RedisStore.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { createLimiter, RedisStore } from '@floodgate/core';
import { redactRedisUrl } from '../../shared/src/local-redis';
import { naiveConsume } from './naive-limiter';

export { redactRedisUrl };

/** Four connections stand in for four app instances sharing one Redis. */
const CONNECTIONS = 4;
const WINDOW_MS = 60_000;
const PING_TIMEOUT_MS = 3_000;

export const RACE_BOUNDS = { requests: { min: 2, max: 1000 }, limit: { min: 1, max: 1000 } } as const;

export interface RaceRequest {
  requests: number;
  limit: number;
}

export interface RaceTally {
  admitted: number;
  denied: number;
  /** Calls that failed (Redis error or timeout): neither admitted nor denied. */
  errors: number;
}

export interface RaceResult extends RaceRequest {
  naive: RaceTally;
  floodgate: RaceTally;
}

export interface Race {
  readonly enabled: boolean;
  /** Where Redis is, without credentials; undefined when disabled. */
  readonly target?: string;
  /** Throws RangeError for bad input, Error when Redis cannot be reached. */
  run(request: RaceRequest): Promise<RaceResult>;
  close(): Promise<void>;
}

// Shown only when there is neither REDIS_URL nor a redis-server on PATH: with one on PATH the demo starts its own.
export const RACE_HINT = 'No REDIS_URL and no redis-server on PATH. Install Redis (the playground then starts and stops its own redis-server), or point REDIS_URL at one:';
export const RACE_COMMAND = 'REDIS_URL=redis://127.0.0.1:6379 pnpm demo';

function whole(name: keyof typeof RACE_BOUNDS, value: unknown): number {
  const { min, max } = RACE_BOUNDS[name];
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new RangeError(`${name} must be a whole number from ${min} to ${max}; got ${JSON.stringify(value)}`);
  }
  return value;
}

async function tally(calls: Promise<boolean>[]): Promise<RaceTally> {
  const settled = await Promise.allSettled(calls);
  const t: RaceTally = { admitted: 0, denied: 0, errors: 0 };
  for (const s of settled) {
    if (s.status === 'rejected') t.errors++;
    else if (s.value) t.admitted++;
    else t.denied++;
  }
  return t;
}

export function createRace(redisUrl: string | undefined, log: (line: string) => void = () => {}): Race {
  if (!redisUrl) {
    return {
      enabled: false,
      async run() {
        throw new Error(`No Redis configured. ${RACE_HINT} ${RACE_COMMAND}`);
      },
      async close() {},
    };
  }
  const target = redactRedisUrl(redisUrl);
  let lastError = '';
  const clients = Array.from({ length: CONNECTIONS }, () => {
    const client = new Redis(redisUrl, {
      lazyConnect: true,
      connectTimeout: 2_000,
      // ioredis waits this long for a closing socket before destroying it; keep shutdown quick.
      disconnectTimeout: 200,
      maxRetriesPerRequest: 1,
      // As Floodgate advises: a script resent after a reconnect could count one request twice.
      autoResendUnfulfilledCommands: false,
      retryStrategy: (times) => Math.min(times * 200, 2_000),
    });
    // Without a listener ioredis would print every failed reconnect; report each new error once.
    client.on('error', (error: Error) => {
      if (error.message !== lastError) log(`race: Redis at ${target}: ${error.message}`);
      lastError = error.message;
    });
    client.on('ready', () => {
      lastError = '';
    });
    return client;
  });

  async function reachable(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`Redis at ${target} did not answer within ${PING_TIMEOUT_MS} ms`)), PING_TIMEOUT_MS);
    });
    try {
      await Promise.race([Promise.all(clients.map((c) => c.ping())), timeout]);
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      throw new Error(`Redis at ${target} is not reachable (${why}).`);
    } finally {
      clearTimeout(timer);
    }
  }

  return {
    enabled: true,
    target,
    async run(request) {
      const requests = whole('requests', request?.requests);
      const limit = whole('limit', request?.limit);
      await reachable();
      // A fresh subject per run: keys never collide with earlier runs or other users of this Redis.
      const run = randomBytes(6).toString('hex');

      const naiveKey = `fg-playground:naive:${run}`;
      const naive = await tally(
        Array.from({ length: requests }, (_, i) => naiveConsume(clients[i % CONNECTIONS], naiveKey, limit, WINDOW_MS)),
      );

      // One limiter per connection, as each app instance would build its own; all share the keys in Redis.
      const limiters = clients.map((client) =>
        createLimiter({
          // One script call per request, so the race is between hundreds of scripts, not a few
          // batches. The default ('turn') would send each connection's requests of one event-loop
          // turn in one call, decided in order: as exact, but it would hide the race this panel shows.
          store: new RedisStore({ client, timeoutMs: 5_000, coalesce: false }),
          algorithm: 'fixed-window',
          limit,
          windowMs: WINDOW_MS,
          prefix: `fg-playground-${run}`,
          // Off so that every request reaches Redis: the race is about the store, not the local cache.
          blockCacheSize: 0,
          // A store failure must show as an error here, never as an admission (the default is 'open').
          failMode: 'closed',
        }),
      );
      const floodgate = await tally(
        Array.from({ length: requests }, (_, i) =>
          limiters[i % CONNECTIONS].consume('race-subject').then((d) => {
            if (d.degraded) throw new Error(`store failed (${d.reason})`);
            return d.allowed;
          }),
        ),
      );
      return { requests, limit, naive, floodgate };
    },
    async close() {
      // A client that never connected has nothing to QUIT; one that did gets a clean goodbye.
      await Promise.all(
        clients.map((c) => (c.status === 'ready' ? c.quit().then(() => undefined, () => c.disconnect()) : c.disconnect())),
      );
    },
  };
}
