// One process of the Nest race: a Nest app (Express or Fastify) on Redis; on 'go' it fires N requests at itself at once, all on one subject, and reports the statuses.
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

export interface NestRaceSetup {
  type: 'setup';
  platform: 'express' | 'fastify';
  redisPort: number;
  prefix: string;
  limit: number;
  inFlight: number;
}
export interface NestRaceGo {
  type: 'go';
  algorithm: AlgorithmName;
  subject: string;
}
export type NestRaceReply =
  | { type: 'ready'; pid: number }
  /** Every request of the round has reached the guard, and its script call is written. */
  | { type: 'sent'; pid: number }
  | { type: 'done'; pid: number; sent: number; admitted: number; denied: number; failed: number; lastSentAt: number; firstReplyAt: number }
  | { type: 'error'; message: string };

const now = () => performance.timeOrigin + performance.now();
const send = (message: NestRaceReply) => process.send?.(message);

/** `limit` per hour; token-bucket and gcra get burst = limit, refilled 1 per hour: nothing refills during the race. */
function optionsFor(algorithm: AlgorithmName, limit: number): RateLimitOptions {
  return algorithm === 'token-bucket' || algorithm === 'gcra' ? { algorithm, burst: limit, refillPerSecond: 1 / 3600 } : { algorithm, limit, windowMs: '1h' };
}

let setup: NestRaceSetup;
let app: INestApplication;
let port = 0;
let client: Redis;
// A connection per request: a kept-alive socket the server closed between rounds (its keepAliveTimeout) would fail a request.
const agent = new Agent({ keepAlive: false, maxSockets: Infinity });
/** Requests of the current round that reached the guard (its key function ran). */
let entered = 0;
let onEntered: (() => void) | undefined;

async function onSetup(message: NestRaceSetup): Promise<void> {
  setup = message;
  client = new Redis({ host: '127.0.0.1', port: message.redisPort, autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 1 });
  client.on('error', () => undefined);
  await client.ping();
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
        prefix: message.prefix,
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
  app = await NestFactory.create(RaceModule, message.platform === 'express' ? new ExpressAdapter() : new FastifyAdapter(), { logger: false, abortOnError: false });
  await app.listen(0, '127.0.0.1');
  port = ((app.getHttpServer() as Server).address() as AddressInfo).port;
  // Loads every script (NOSCRIPT -> EVAL) and opens sockets before the race.
  for (const algorithm of RACE_ALGORITHMS) await get(algorithm, `warm-up-${process.pid}`);
  send({ type: 'ready', pid: process.pid });
}

function get(algorithm: string, subject: string): Promise<number> {
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
  const requests = Array.from({ length: setup.inFlight }, () =>
    get(message.algorithm, message.subject).then(
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
            await app?.close();
            client?.disconnect();
            process.exit(0);
          })();
  handle.catch((error: unknown) => send({ type: 'error', message: error instanceof Error ? (error.stack ?? error.message) : String(error) }));
});
process.on('disconnect', () => process.exit(0));
