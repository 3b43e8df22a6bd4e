// The requests the identity and attack suites send: GET /r from chosen headers, one at a time or many at once.
import { Agent, request as httpRequest } from 'node:http';
import type { HttpRateLimitOptions } from '@floodgate/core';
import { startRedis, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import type { AdapterHarness, RunningApp } from './harness';

export const quietLogger = { warn() {}, error() {} };

export function get(agent: Agent, port: number, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path: '/r', method: 'GET', headers, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Sends every request, `concurrency` at a time; resolves with their statuses in order. */
export async function sendAll(agent: Agent, port: number, all: Record<string, string>[], concurrency = 25): Promise<number[]> {
  const statuses: number[] = new Array(all.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < all.length) {
        const i = next++;
        statuses[i] = await get(agent, port, all[i]);
      }
    }),
  );
  return statuses;
}

/**
 * Exactly n per test: gcra with a one-hour refill, so no window boundary (where a sliding window
 * legitimately re-admits a little) can fall inside a test.
 */
export const exactly = (n: number) => ({ algorithm: 'gcra' as const, burst: n, refillPerSecond: n / 3_600 });
export const count = (statuses: number[], status: number) => statuses.filter((s) => s === status).length;

/** An app with `options` on one app-level limiter and one route, GET /r; the suites' logger stays quiet unless `options` sets one. */
export function startOnR(h: AdapterHarness, options: HttpRateLimitOptions, trustProxy: boolean): Promise<RunningApp> {
  return h.start({ options: { logger: quietLogger, ...options }, routes: [{ method: 'GET', path: '/r' }], trustProxy });
}

/** What a suite on a real Redis holds for its tests: the server, a client, a keep-alive agent, and the apps to close. */
export interface RedisSuiteContext {
  readonly redis: RedisServer;
  readonly client: Redis;
  readonly agent: Agent;
  /** Apps started by the tests; closed after them. */
  readonly apps: RunningApp[];
}

/**
 * Registers beforeAll/afterAll for a suite that runs apps on one real redis-server of its own, and
 * returns a getter for them (set once beforeAll has run).
 */
export function useRedisSuite(): () => RedisSuiteContext {
  let context: RedisSuiteContext | undefined;
  beforeAll(async () => {
    const redis = await startRedis();
    context = { redis, client: redis.client({ autoResendUnfulfilledCommands: false }), agent: new Agent({ keepAlive: true, maxSockets: 25 }), apps: [] };
  }, 30_000);
  afterAll(async () => {
    if (!context) return;
    context.agent.destroy();
    await Promise.all(context.apps.map((a) => a.close()));
    context.client.disconnect();
    await context.redis.stop();
  });
  return () => {
    if (!context) throw new Error('useRedisSuite: used before beforeAll ran');
    return context;
  };
}
