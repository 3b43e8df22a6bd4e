// One process of the Nest race: a Nest app per platform (Express, Fastify) on Redis; on 'go' it fires N requests at one of them at once, all on one subject, and reports the statuses.
import { Agent, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { Controller, Get, Module, type INestApplication } from '@nestjs/common';
import { APP_GUARD, NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { RedisStore, type AlgorithmName } from '@floodgate/core';
import { Redis } from 'ioredis';
import { FloodgateGuard, FloodgateModule, RateLimit, type RateLimitOptions } from '../../src';

export const RACE_ALGORITHMS: readonly AlgorithmName[] = ['fixed-window', 'sliding-window-log', 'sliding-window-counter', 'token-bucket', 'gcra'];

export type NestRacePlatform = 'express' | 'fastify';
export interface NestRaceSetup {
  type: 'setup';
  /** One app each, on a port of its own, with the prefix `${prefix}-${platform}`: one process start serves every platform's rounds. */
  platforms: readonly NestRacePlatform[];
  redisPort: number;
  prefix: string;
  limit: number;
  inFlight: number;
}
export interface NestRaceGo {
  type: 'go';
  platform: NestRacePlatform;
  algorithm: AlgorithmName;
  subject: string;
}
export type NestRaceReply =
  | { type: 'ready'; pid: number }
  /** Every request of the round has reached the guard, and its script call is written. */
  | { type: 'sent'; pid: number }
  | { type: 'done'; pid: number; sent: number; admitted: number; denied: number; failed: number; lastSentAt: number; firstReplyAt: number }
  | { type: 'error'; message: string };

// The machine's monotonic clock (CLOCK_MONOTONIC, in ms), one clock for every process on it: timeOrigin +
// now() is each process's own reading of the wall clock at start, and two processes' differ by more than
// a Redis round trip (a clean-clone run saw 6 in the handler at once where 5 is the in-flight limit).
const now = () => Number(process.hrtime.bigint()) / 1e6;
const send = (message: NestRaceReply) => process.send?.(message);

/** `limit` per hour; token-bucket and gcra get burst = limit, refilled 1 per hour: nothing refills during the race. */
function optionsFor(algorithm: AlgorithmName, limit: number): RateLimitOptions {
  return algorithm === 'token-bucket' || algorithm === 'gcra' ? { algorithm, burst: limit, refillPerSecond: 1 / 3600 } : { algorithm, limit, windowMs: '1h' };
}

let setup: NestRaceSetup;
const apps = new Map<NestRacePlatform, { app: INestApplication; port: number }>();
let client: Redis;
/** Kept alive between rounds (the servers keep idle sockets for 10 min: none closes one under a request), so a round's requests reuse the last round's connections. */
const KEEP_ALIVE_MS = 600_000;
const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
/** Requests of the current round that reached the guard (its key function ran). */
let entered = 0;
let onEntered: (() => void) | undefined;

async function onSetup(message: NestRaceSetup): Promise<void> {
  setup = message;
  client = new Redis({ host: '127.0.0.1', port: message.redisPort, autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 1 });
  client.on('error', () => undefined);
  await client.ping();
  for (const platform of message.platforms) apps.set(platform, await startApp(platform, `${message.prefix}-${platform}`));
  send({ type: 'ready', pid: process.pid });
}

/** The race app on one platform, listening, its scripts loaded. */
async function startApp(platform: NestRacePlatform, prefix: string): Promise<{ app: INestApplication; port: number }> {
  const message = setup;
  // One route per algorithm, each with its own options, as an app author writes them.
  class RaceController {}
  const proto = RaceController.prototype as unknown as Record<string, () => unknown>;
  for (const algorithm of RACE_ALGORITHMS) {
    proto[algorithm] = () => ({ ok: true });
    const descriptor = Object.getOwnPropertyDescriptor(proto, algorithm)!;
    Get(algorithm)(proto, algorithm, descriptor);
    RateLimit(optionsFor(algorithm, message.limit))(proto, algorithm, descriptor);
  }
  Controller('race')(RaceController);
  @Module({
    imports: [
      FloodgateModule.forRoot({
        // A long timeout: the parent holds Redis stopped (SIGSTOP) until every process has sent its round.
        store: new RedisStore({ client, timeoutMs: 60_000 }),
        prefix,
        blockCacheSize: 0, // every request goes to Redis
        failMode: 'closed', // a store failure is never an admission
        key: (req: { headers: Record<string, unknown> }) => {
          entered++;
          if (entered === setup.inFlight) onEntered?.();
          return req.headers['x-subject'] as string;
        },
      }),
    ],
    controllers: [RaceController],
    providers: [{ provide: APP_GUARD, useClass: FloodgateGuard }],
  })
  class RaceModule {}
  const app = await NestFactory.create(RaceModule, platform === 'express' ? new ExpressAdapter() : new FastifyAdapter(), { logger: false, abortOnError: false });
  await app.listen(0, '127.0.0.1');
  const server = app.getHttpServer() as Server;
  server.keepAliveTimeout = KEEP_ALIVE_MS;
  const port = (server.address() as AddressInfo).port;
  // Loads every script (NOSCRIPT -> EVAL) and opens sockets before the race.
  for (const algorithm of RACE_ALGORITHMS) await get(port, algorithm, `warm-up-${process.pid}`);
  return { app, port };
}

function get(port: number, algorithm: string, subject: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: `/race/${algorithm}`, headers: { 'x-subject': subject }, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

async function onGo(message: NestRaceGo): Promise<void> {
  entered = 0;
  let admitted = 0;
  let denied = 0;
  let failed = 0;
  let firstReplyAt = 0;
  const allEntered = new Promise<void>((resolve) => (onEntered = resolve));
  const { port } = apps.get(message.platform)!;
  const requests = Array.from({ length: setup.inFlight }, () =>
    get(port, message.algorithm, message.subject).then(
      (status) => {
        firstReplyAt ||= now();
        if (status === 200) admitted++;
        else if (status === 429) denied++;
        else failed++;
      },
      () => {
        firstReplyAt ||= now();
        failed++;
      },
    ),
  );
  await allEntered;
  // The script calls of the last turn are written in a setImmediate queued before this one.
  await new Promise((resolve) => setImmediate(resolve));
  const lastSentAt = now();
  send({ type: 'sent', pid: process.pid });
  await Promise.all(requests);
  send({ type: 'done', pid: process.pid, sent: setup.inFlight, admitted, denied, failed, lastSentAt, firstReplyAt });
}

process.on('message', (message: NestRaceSetup | NestRaceGo | { type: 'exit' }) => {
  const handle =
    message.type === 'setup'
      ? onSetup(message)
      : message.type === 'go'
        ? onGo(message)
        : (async () => {
            agent.destroy();
            for (const { app } of apps.values()) await app.close();
            client?.disconnect();
            process.exit(0);
          })();
  handle.catch((error: unknown) => send({ type: 'error', message: error instanceof Error ? (error.stack ?? error.message) : String(error) }));
});
process.on('disconnect', () => process.exit(0));
