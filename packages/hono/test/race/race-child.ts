// One process of the Hono race: a Hono app on @hono/node-server with Floodgate on a shared Redis; on 'go' it fires N requests at once at its own server and reports the statuses.
import { Agent, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { getConnInfo } from '@hono/node-server/conninfo';
import { RedisStore, type AlgorithmName } from '@floodgate/core';
import { Hono } from 'hono';
import { Redis } from 'ioredis';
import { rateLimit } from '../../src';

export interface HonoRaceSetup {
  type: 'setup';
  redisPort: number;
  prefix: string;
  limit: number;
  inFlight: number;
}
export interface HonoRaceGo {
  type: 'go';
  algorithm: AlgorithmName;
}
export type HonoRaceReply =
  | { type: 'ready' }
  /** Every request of the round has reached the limiter, and its script call has been written to Redis. */
  | { type: 'sent' }
  | { type: 'done'; sent: number; admitted: number; denied: number; failed: number; lastSentAt: number; firstReplyAt: number }
  | { type: 'error'; message: string };

export const RACE_ALGORITHMS: readonly AlgorithmName[] = ['fixed-window', 'sliding-window-log', 'sliding-window-counter', 'token-bucket', 'gcra'];

// The machine's monotonic clock (CLOCK_MONOTONIC, in ms), one clock for every process on it: timeOrigin +
// now() is each process's own reading of the wall clock at start, and two processes' differ by more than
// a Redis round trip (a clean-clone run saw 6 in the handler at once where 5 is the in-flight limit).
const now = () => Number(process.hrtime.bigint()) / 1e6;
const send = (message: HonoRaceReply) => process.send?.(message);

let setup: HonoRaceSetup;
let port = 0;
let arrived = 0;
let onAllArrived: (() => void) | undefined;
// A connection per request, as 400 separate clients would: no idle keep-alive socket that the server may close between rounds.
const agent = new Agent({ keepAlive: false, maxSockets: Infinity });

async function onSetup(message: HonoRaceSetup): Promise<void> {
  setup = message;
  const client = new Redis({ host: '127.0.0.1', port: message.redisPort, autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 1 });
  client.on('error', () => undefined);
  await client.ping();
  // A long deadline: the parent holds Redis stopped (SIGSTOP) until every process has sent its round.
  const store = new RedisStore({ client, timeoutMs: 20_000 });
  const app = new Hono();
  // Counts the requests that reached the app, before the limiter: 'sent' once all of them have.
  app.use((_c, next) => {
    if (++arrived === setup.inFlight) onAllArrived?.();
    return next();
  });
  for (const algorithm of RACE_ALGORITHMS) {
    // limit per hour; token-bucket and gcra get burst = limit refilled 1 per hour: nothing refills during the race.
    const limits = algorithm === 'token-bucket' || algorithm === 'gcra' ? { burst: message.limit, refillPerSecond: 1 / 3_600 } : { limit: message.limit, windowMs: '1h' as const };
    // Every process's requests come from 127.0.0.1 (getConnInfo): one subject for the whole race.
    const limiter = rateLimit({ store, prefix: message.prefix, algorithm, ...limits, getConnInfo, blockCacheSize: 0, failMode: 'closed' });
    app.get(`/race/${algorithm}`, limiter, (c) => c.text('ok'));
    app.get(`/warm/${algorithm}`, limiter.route({ group: `warm-${algorithm}` }), (c) => c.text('ok'));
  }
  const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => server.once('listening', resolve));
  port = (server.address() as AddressInfo).port;
  // Loads each script (NOSCRIPT -> EVAL) and opens the connection before the race, on buckets of their own.
  for (const algorithm of RACE_ALGORITHMS) await get(`/warm/${algorithm}`);
  send({ type: 'ready' });
}

function get(path: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', () => resolve(0));
    req.end();
  });
}

async function onGo(message: HonoRaceGo): Promise<void> {
  arrived = 0;
  const allArrived = new Promise<void>((resolve) => (onAllArrived = resolve));
  let firstReplyAt = 0;
  const statuses = await Promise.all([
    ...Array.from({ length: setup.inFlight }, () =>
      get(`/race/${message.algorithm}`).then((status) => {
        if (firstReplyAt === 0) firstReplyAt = now();
        return status;
      }),
    ),
    allArrived.then(async () => {
      // The last request's script call leaves at the end of its turn ('turn' coalescing): let it go.
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setImmediate(resolve));
      lastSentAt = now();
      send({ type: 'sent' });
      return -1;
    }),
  ]);
  const answers = statuses.filter((s) => s !== -1);
  const admitted = answers.filter((s) => s === 200).length;
  const denied = answers.filter((s) => s === 429).length;
  send({ type: 'done', sent: answers.length, admitted, denied, failed: answers.length - admitted - denied, lastSentAt, firstReplyAt });
}
let lastSentAt = 0;

process.on('message', (message: HonoRaceSetup | HonoRaceGo | { type: 'exit' }) => {
  const handle = message.type === 'setup' ? onSetup(message) : message.type === 'go' ? onGo(message) : Promise.resolve(process.exit(0));
  handle.catch((error: unknown) => send({ type: 'error', message: error instanceof Error ? (error.stack ?? error.message) : String(error) }));
});
process.on('disconnect', () => process.exit(0));
