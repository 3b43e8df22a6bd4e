// The servers @floodgate/client is measured against, each as its users run it, on real Redis: Floodgate's adapters and the peers.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { Redis } from 'ioredis';

/** Every server the client loop runs against, in the order the table shows them. */
export const PACING_SERVERS = [
  'floodgate-express-draft-6',
  'floodgate-fastify-draft-10',
  'floodgate-koa-legacy',
  'floodgate-express-fixed-window',
  'floodgate-express-retry-after-only',
  'express-rate-limit-draft-6',
  'express-rate-limit-draft-7',
  'express-rate-limit-draft-8',
  'fastify-rate-limit-x-ratelimit',
  'fastify-rate-limit-draft',
  'koa-ratelimit',
] as const;
export type PacingServerId = (typeof PACING_SERVERS)[number];

export interface PacingServerInfo {
  readonly label: string;
  /** What the server sends, as the table says it. */
  readonly sends: string;
  /** Only Retry-After on a 429 and no quota fields: the goal is at most one 429, not none. */
  readonly retryAfterOnly: boolean;
}

export const SERVER_INFO: Record<PacingServerId, PacingServerInfo> = {
  'floodgate-express-draft-6': { label: 'Floodgate on Express (default headers)', sends: 'RateLimit-Limit/-Remaining/-Reset (draft-6) + Floodgate-Reset-Ms, Retry-After', retryAfterOnly: false },
  'floodgate-fastify-draft-10': { label: "Floodgate on Fastify (headers: 'draft-10')", sends: 'RateLimit-Policy + RateLimit (draft-10; t also in ms: floodgate-t-ms), Retry-After', retryAfterOnly: false },
  'floodgate-koa-legacy': { label: "Floodgate on Koa (headers: 'legacy')", sends: 'X-RateLimit-* (reset: Unix seconds) + Floodgate-Reset-Ms, Retry-After', retryAfterOnly: false },
  'floodgate-express-fixed-window': { label: "Floodgate on Express (algorithm: 'fixed-window')", sends: 'RateLimit-Limit/-Remaining/-Reset (draft-6) + Floodgate-Reset-Ms, Retry-After', retryAfterOnly: false },
  'floodgate-express-retry-after-only': { label: 'Floodgate on Express (headers: false)', sends: 'Retry-After on a 429 only', retryAfterOnly: true },
  'express-rate-limit-draft-6': { label: "express-rate-limit (standardHeaders: 'draft-6')", sends: 'RateLimit-* (draft-6), RateLimit-Policy, Retry-After', retryAfterOnly: false },
  'express-rate-limit-draft-7': { label: "express-rate-limit (standardHeaders: 'draft-7')", sends: 'RateLimit: limit=, remaining=, reset= (draft-7), Retry-After', retryAfterOnly: false },
  'express-rate-limit-draft-8': { label: "express-rate-limit (standardHeaders: 'draft-8')", sends: 'RateLimit-Policy (pk) + RateLimit (draft-8), Retry-After', retryAfterOnly: false },
  'fastify-rate-limit-x-ratelimit': { label: '@fastify/rate-limit (default headers)', sends: 'x-ratelimit-* (reset: delta seconds), retry-after', retryAfterOnly: false },
  'fastify-rate-limit-draft': { label: '@fastify/rate-limit (enableDraftSpec: true)', sends: 'ratelimit-* (draft-6 style), retry-after', retryAfterOnly: false },
  'koa-ratelimit': { label: "koa-ratelimit (driver: 'redis')", sends: 'X-RateLimit-* (reset: Unix seconds, rounded down), Retry-After', retryAfterOnly: false },
};

export interface PacingServer {
  readonly id: PacingServerId;
  readonly url: string;
  close(): Promise<void>;
}

export interface PacingLimit {
  readonly limit: number;
  readonly windowMs: number;
}

const BODY = 'ok';

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function closer(server: Server): () => Promise<void> {
  return () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
}

/**
 * Starts one server on 127.0.0.1 with `limit` per `windowMs` per client IP, its state in the Redis on
 * `redisPort` under `prefix` (each server its own keys, so they can run side by side).
 */
export async function startPacingServer(id: PacingServerId, redisPort: number, prefix: string, { limit, windowMs }: PacingLimit): Promise<PacingServer> {
  const redis = new Redis({ host: '127.0.0.1', port: redisPort, maxRetriesPerRequest: 1, lazyConnect: false });
  redis.on('error', () => undefined);
  const done = async (url: string, close: () => Promise<void>): Promise<PacingServer> => ({
    id,
    url,
    close: async () => {
      await close();
      redis.disconnect();
    },
  });

  if (id.startsWith('floodgate-')) {
    const { RedisStore } = require('@floodgate/core') as typeof import('@floodgate/core');
    const store = new RedisStore({ client: redis });
    const common = { limit, windowMs, store, prefix };
    if (id === 'floodgate-fastify-draft-10') {
      const fastify = (await import('fastify')).default;
      const { rateLimit } = require('@floodgate/fastify');
      const app = fastify({ logger: false });
      await app.register(rateLimit, { ...common, headers: 'draft-10' });
      app.get('/', async () => BODY);
      await app.listen({ port: 0, host: '127.0.0.1' });
      return done(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, () => app.close());
    }
    if (id === 'floodgate-koa-legacy') {
      const Koa = (await import('koa')).default;
      const { rateLimit } = require('@floodgate/koa');
      const app = new Koa();
      app.use(rateLimit({ ...common, headers: 'legacy' }));
      app.use((ctx) => {
        ctx.body = BODY;
      });
      const server = app.listen(0, '127.0.0.1');
      return done(await listen(server), closer(server));
    }
    const express = (await import('express')).default;
    const { rateLimit } = require('@floodgate/express');
    const app = express();
    const options =
      id === 'floodgate-express-retry-after-only' ? { ...common, headers: false } : id === 'floodgate-express-fixed-window' ? { ...common, algorithm: 'fixed-window' } : common;
    app.use(rateLimit(options));
    app.get('/', (_req, res) => void res.send(BODY));
    const server = app.listen(0, '127.0.0.1');
    return done(await listen(server), closer(server));
  }

  if (id.startsWith('express-rate-limit-')) {
    const express = (await import('express')).default;
    const { rateLimit } = require('express-rate-limit');
    const { RedisStore: ErlRedisStore } = require('rate-limit-redis');
    const app = express();
    app.use(
      rateLimit({
        windowMs,
        limit,
        standardHeaders: id.slice('express-rate-limit-'.length),
        legacyHeaders: false,
        store: new ErlRedisStore({ prefix: `${prefix}:`, sendCommand: (command: string, ...args: string[]) => redis.call(command, ...args) }),
      }),
    );
    app.get('/', (_req, res) => void res.send(BODY));
    const server = app.listen(0, '127.0.0.1');
    return done(await listen(server), closer(server));
  }

  if (id.startsWith('fastify-rate-limit-')) {
    const fastify = (await import('fastify')).default;
    const mod = require('@fastify/rate-limit');
    const app = fastify({ logger: false });
    await app.register(mod.default ?? mod, {
      max: limit,
      timeWindow: windowMs,
      redis,
      nameSpace: `${prefix}-`,
      ...(id === 'fastify-rate-limit-draft' ? { enableDraftSpec: true } : {}),
    });
    app.get('/', async () => BODY);
    await app.listen({ port: 0, host: '127.0.0.1' });
    return done(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, () => app.close());
  }

  // koa-ratelimit with its Redis driver, as its README shows it.
  const Koa = (await import('koa')).default;
  const ratelimit = require('koa-ratelimit');
  const app = new Koa();
  app.use(ratelimit({ driver: 'redis', db: redis, duration: windowMs, max: limit, namespace: prefix, id: (ctx: { ip: string }) => ctx.ip }));
  app.use((ctx) => {
    ctx.body = BODY;
  });
  const server = app.listen(0, '127.0.0.1');
  return done(await listen(server), closer(server));
}
