// Every contender's limiter, built the way its documentation shows, for Express, Fastify, Koa, NestJS (both platforms) and Hono.
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Context, Middleware } from 'koa';
import type { Context as HonoContext, MiddlewareHandler } from 'hono';
import type { DynamicModule, Provider } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { MemoryStore, RedisStore, type CreateLimiterOptions, type Duration } from '@floodgate/core';
import { admitLimits } from './admit';
import type { LimiterSpec, Wiring } from './types';

// Adapters and peers load with require(): each is loaded only when it is measured.

export interface Built<T> {
  handler: T;
  wiring: Wiring;
}

/** Options every Floodgate entry takes as they are: numbers only (a limit function's form differs between core and the adapters). */
type NumberLimits = Omit<CreateLimiterOptions, 'limit' | 'windowMs' | 'burst' | 'refillPerSecond' | 'limits'> & { limit?: number; windowMs?: Duration; burst?: number; refillPerSecond?: number; limits?: { name?: string; limit?: number; windowMs?: Duration }[] };

function floodgateOptions(spec: LimiterSpec, redis: Redis | undefined): NumberLimits & Record<string, unknown> {
  // A 1 s deadline instead of the default 100 ms: on a busy machine a slow reply would otherwise turn
  // into failure-mode decisions (served without Redis), and the run would measure the wrong thing.
  const coalesce = spec.coalesce === undefined ? {} : { coalesce: spec.coalesce === 'off' ? (false as const) : spec.coalesce };
  const store = spec.store === 'redis' ? new RedisStore({ client: need(redis), timeoutMs: 1_000, ...coalesce }) : new MemoryStore();
  const options: NumberLimits & Record<string, unknown> = {
    store,
    algorithm: spec.algorithm,
    ...admitLimits(spec.algorithm, spec.limit, spec.windowMs),
    prefix: spec.prefix,
  };
  if (spec.hotKeyInstances) options.hotKeys = { instances: spec.hotKeyInstances };
  if (spec.otel) options.meterProvider = sdkMeterProvider();
  return options;
}

/**
 * What an app that exports metrics registers: the SDK's MeterProvider with a reader, so every
 * instrument records and aggregates (the export itself, every 60 s by default, is not what a
 * request pays for, and the bench run is shorter).
 */
function sdkMeterProvider(): NonNullable<CreateLimiterOptions['meterProvider']> {
  const { MeterProvider, PeriodicExportingMetricReader, InMemoryMetricExporter, AggregationTemporality } =
    require('@opentelemetry/sdk-metrics') as typeof import('@opentelemetry/sdk-metrics');
  const reader = new PeriodicExportingMetricReader({ exporter: new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE), exportIntervalMillis: 60_000 });
  // The SDK is typed against its own copy of @opentelemetry/api; at run time both speak the same API.
  return new MeterProvider({ readers: [reader] }) as unknown as NonNullable<CreateLimiterOptions['meterProvider']>;
}

function need(redis: Redis | undefined): Redis {
  if (!redis) throw new Error('this contender needs Redis (redisPort)');
  return redis;
}

/**
 * The floors: no limiting, only Redis round trips. 'redis-floor': one PING per request.
 * 'redis-floor-turn': the requests of one event-loop turn share one PING, sent at the end of the turn
 * (as Floodgate's RedisStore sends a turn's script calls). Calls `done` once Redis answered.
 */
function redisFloor(spec: LimiterSpec, redis: Redis | undefined): (done: (error?: Error) => void) => void {
  const client = need(redis);
  if (spec.kind === 'redis-floor') return (done) => void client.ping().then(() => done(), done);
  let waiting: ((error?: Error) => void)[] = [];
  const flush = () => {
    const batch = waiting;
    waiting = [];
    client.ping().then(
      () => batch.forEach((d) => d()),
      (error: Error) => batch.forEach((d) => d(error)),
    );
  };
  return (done) => {
    if (waiting.push(done) === 1) setImmediate(flush);
  };
}

function headerKey(header: string | undefined, value: unknown, ip: string | undefined): string {
  if (header && typeof value === 'string' && value) return value;
  return ip ?? 'unknown';
}

// ---------------------------------------------------------------- Express

export function expressLimiter(spec: LimiterSpec, redis: Redis | undefined): Built<RequestHandler> {
  const key = (req: Request) => headerKey(spec.keyHeader, spec.keyHeader && req.headers[spec.keyHeader], req.ip);
  switch (spec.kind) {
    case 'floodgate': {
      const { rateLimit } = require('@floodgate/express');
      const options = floodgateOptions(spec, redis);
      if (spec.keyHeader) options.key = key;
      return { handler: rateLimit(options), wiring: 'adapter' };
    }
    case 'express-rate-limit': {
      const { rateLimit } = require('express-rate-limit');
      const options: Record<string, unknown> = { windowMs: spec.windowMs, limit: spec.limit, keyGenerator: spec.keyHeader ? key : undefined };
      // In memory: no store option, so its default MemoryStore, as its README's first example.
      if (spec.store !== 'memory') {
        const { RedisStore: ErlRedisStore } = require('rate-limit-redis');
        const client = need(redis);
        options.store = new ErlRedisStore({
          prefix: `${spec.prefix}:`,
          sendCommand: (command: string, ...args: string[]) => client.call(command, ...args),
        });
      }
      return { handler: rateLimit(options), wiring: 'n/a' };
    }
    case 'rate-limiter-flexible': {
      // The Express middleware from rate-limiter-flexible's own wiki, on RateLimiterMemory or RateLimiterRedis.
      const { RateLimiterMemory, RateLimiterRedis } = require('rate-limiter-flexible');
      const common = { keyPrefix: spec.prefix, points: spec.limit, duration: Math.ceil(spec.windowMs / 1000) };
      const limiter = spec.store === 'memory' ? new RateLimiterMemory(common) : new RateLimiterRedis({ storeClient: need(redis), ...common });
      const handler: RequestHandler = (req: Request, res: Response, next: NextFunction) => {
        limiter.consume(key(req)).then(
          () => next(),
          (rejection: unknown) => {
            if (rejection instanceof Error) next(rejection);
            else res.status(429).send('Too Many Requests');
          },
        );
      };
      return { handler, wiring: 'n/a' };
    }
    case 'redis-floor':
    case 'redis-floor-turn': {
      const floor = redisFloor(spec, redis);
      const handler: RequestHandler = (_req, _res, next) => floor((error) => next(error));
      return { handler, wiring: 'n/a' };
    }
    case 'naive': {
      // GET, compare, INCR: the race every hand-rolled limiter has.
      const client = need(redis);
      const handler: RequestHandler = (req, res, next) => {
        const k = `${spec.prefix}:${key(req)}`;
        client
          .get(k)
          .then(async (value) => {
            if (Number(value ?? 0) >= spec.limit) {
              res.status(429).send('Too Many Requests');
              return;
            }
            const n = await client.incr(k);
            if (n === 1) await client.pexpire(k, spec.windowMs);
            next();
          })
          .catch(next);
      };
      return { handler, wiring: 'n/a' };
    }
    default:
      throw new Error(`${spec.kind} has no Express contender`);
  }
}

// ---------------------------------------------------------------- Fastify

/** Registers the limiter on `app` (an encapsulated context when there are several mounts). */
export async function fastifyLimiter(app: FastifyInstance, spec: LimiterSpec, redis: Redis | undefined): Promise<Wiring> {
  const key = (req: FastifyRequest) => headerKey(spec.keyHeader, spec.keyHeader && req.headers[spec.keyHeader], req.ip);
  switch (spec.kind) {
    case 'floodgate': {
      const mod = require('@floodgate/fastify');
      const options = floodgateOptions(spec, redis);
      if (spec.keyHeader) options.key = key;
      await app.register(mod.rateLimit ?? mod.default, options);
      return 'adapter';
    }
    case 'redis-floor':
    case 'redis-floor-turn': {
      const floor = redisFloor(spec, redis);
      app.addHook('onRequest', (_req, _reply, done) => floor((error) => done(error)));
      return 'n/a';
    }
    case 'fastify-rate-limit': {
      const mod = require('@fastify/rate-limit');
      // In memory: no redis option, so its default in-process store (an LRU of 5,000 keys).
      const store = spec.store === 'memory' ? {} : { redis: need(redis), nameSpace: `${spec.prefix}-` };
      await app.register(mod.default ?? mod, {
        max: spec.limit,
        timeWindow: spec.windowMs,
        ...store,
        keyGenerator: spec.keyHeader ? key : undefined,
      });
      return 'n/a';
    }
    default:
      throw new Error(`${spec.kind} has no Fastify contender`);
  }
}

// ---------------------------------------------------------------- Koa

export function koaLimiter(spec: LimiterSpec, redis: Redis | undefined): Built<Middleware> {
  const key = (ctx: Context) => headerKey(spec.keyHeader, spec.keyHeader && ctx.get(spec.keyHeader), ctx.ip);
  switch (spec.kind) {
    case 'floodgate': {
      const { rateLimit } = require('@floodgate/koa');
      const options = floodgateOptions(spec, redis);
      if (spec.keyHeader) options.key = key;
      return { handler: rateLimit(options), wiring: 'adapter' };
    }
    case 'redis-floor':
    case 'redis-floor-turn': {
      const floor = redisFloor(spec, redis);
      const handler: Middleware = (_ctx, next) =>
        new Promise<void>((resolve, reject) => floor((error) => (error ? reject(error) : resolve()))).then(next);
      return { handler, wiring: 'n/a' };
    }
    case 'koa-ratelimit': {
      const ratelimit = require('koa-ratelimit');
      // The memory driver as its README shows it: `db: new Map()` made once. Without a db it builds
      // a new Map for every request (limiter/memory.js) and never limits anything.
      const handler = ratelimit({
        ...(spec.store === 'memory' ? { driver: 'memory', db: new Map() } : { driver: 'redis', db: need(redis) }),
        duration: spec.windowMs,
        max: spec.limit,
        namespace: spec.prefix,
        id: (ctx: Context) => key(ctx),
      }) as Middleware;
      return { handler, wiring: 'n/a' };
    }
    default:
      throw new Error(`${spec.kind} has no Koa contender`);
  }
}

// ---------------------------------------------------------------- NestJS (Express and Fastify platforms)

/** What a Nest app registers for one limiter: modules to import and providers (a global guard, APP_GUARD). */
export interface NestLimiter {
  imports: DynamicModule[];
  providers: Provider[];
  wiring: Wiring;
}

/** The platform request's IP (Express `req.ip`, Fastify `request.ip`), or the subject header when the spec names one. */
type NestRequest = { ip?: string; headers: Record<string, string | string[] | undefined> };

export function nestLimiter(spec: LimiterSpec, redis: Redis | undefined): NestLimiter {
  const { APP_GUARD } = require('@nestjs/core') as typeof import('@nestjs/core');
  const key = (req: NestRequest) => headerKey(spec.keyHeader, spec.keyHeader && req.headers[spec.keyHeader], req.ip);
  switch (spec.kind) {
    case 'floodgate': {
      // As the package's README shows: FloodgateModule.forRoot and FloodgateGuard as APP_GUARD.
      const { FloodgateModule, FloodgateGuard } = require('@floodgate/nestjs') as typeof import('@floodgate/nestjs');
      const options = floodgateOptions(spec, redis);
      if (spec.keyHeader) options.key = key;
      return { imports: [FloodgateModule.forRoot(options)], providers: [{ provide: APP_GUARD, useClass: FloodgateGuard }], wiring: 'adapter' };
    }
    case 'nestjs-throttler': {
      // As its README shows: ThrottlerModule.forRoot with one throttler (ttl in ms) and ThrottlerGuard
      // as APP_GUARD; on Redis, the storage its users pick (@nest-lab/throttler-storage-redis).
      const { ThrottlerModule, ThrottlerGuard } = require('@nestjs/throttler') as typeof import('@nestjs/throttler');
      let storage: unknown;
      if (spec.store !== 'memory') {
        const { ThrottlerStorageRedisService } = require('@nest-lab/throttler-storage-redis');
        // Its keys are a hash of controller, handler and caller, the same in every server of this
        // bench: a client with its own keyPrefix keeps each contender's counts (and blocks) apart.
        storage = new ThrottlerStorageRedisService(need(redis).duplicate({ keyPrefix: `${spec.prefix}:` }));
      }
      const module = ThrottlerModule.forRoot({
        throttlers: [{ ttl: spec.windowMs, limit: spec.limit }],
        ...(storage ? { storage: storage as never } : {}),
        ...(spec.keyHeader ? { getTracker: (req: Record<string, unknown>) => key(req as NestRequest) } : {}),
      });
      return { imports: [module], providers: [{ provide: APP_GUARD, useClass: ThrottlerGuard }], wiring: 'n/a' };
    }
    case 'redis-floor':
    case 'redis-floor-turn': {
      // A global guard that waits for the floor's PING: where a Nest limiter runs, nothing else.
      const floor = redisFloor(spec, redis);
      const guard = { canActivate: () => new Promise<boolean>((resolve, reject) => floor((error) => (error ? reject(error) : resolve(true)))) };
      return { imports: [], providers: [{ provide: APP_GUARD, useValue: guard }], wiring: 'n/a' };
    }
    default:
      throw new Error(`${spec.kind} has no NestJS contender`);
  }
}

// ---------------------------------------------------------------- Hono (on @hono/node-server)

/**
 * hono-rate-limiter's RedisStore takes a client of the shape `{ scriptLoad, evalsha(sha, keys,
 * args), decr, del }` (@upstash/redis and @vercel/kv have it as they are); an app on its own Redis
 * with ioredis hands it this shim (as bench/test/migrating.test.ts and docs/migrating.md do).
 */
function honoRateLimiterClient(redis: Redis) {
  return {
    scriptLoad: (script: string) => redis.script('LOAD', script) as Promise<string>,
    evalsha: (sha: string, keys: string[], args: unknown[]) => redis.evalsha(sha, keys.length, ...keys, ...(args as string[])),
    decr: (key: string) => redis.decr(key),
    del: (key: string) => redis.del(key),
  };
}

/**
 * Hono has no trust-proxy setting: with `trustProxy` (the many-caller runs, through the loopback
 * proxy) Floodgate gets `trustProxy: ['127.0.0.1']` and hono-rate-limiter's keyGenerator reads the
 * right-most X-Forwarded-For address of a request from loopback, as an app behind one proxy writes it.
 */
export function honoLimiter(spec: LimiterSpec, redis: Redis | undefined, trustProxy: boolean): Built<MiddlewareHandler> {
  const { getConnInfo } = require('@hono/node-server/conninfo') as typeof import('@hono/node-server/conninfo');
  const clientIp = (c: HonoContext) => {
    const remote = getConnInfo(c).remote.address;
    const forwarded = trustProxy && remote === '127.0.0.1' ? c.req.header('x-forwarded-for') : undefined;
    return forwarded ? forwarded.slice(forwarded.lastIndexOf(',') + 1).trim() : remote;
  };
  const key = (c: HonoContext) => headerKey(spec.keyHeader, spec.keyHeader && c.req.header(spec.keyHeader), clientIp(c));
  switch (spec.kind) {
    case 'floodgate': {
      // As the package's README shows: the client IP through @hono/node-server's getConnInfo.
      const { rateLimit } = require('@floodgate/hono') as typeof import('@floodgate/hono');
      const options: Record<string, unknown> = { ...floodgateOptions(spec, redis), getConnInfo, ...(trustProxy ? { trustProxy: ['127.0.0.1'] } : {}) };
      if (spec.keyHeader) options.key = key;
      return { handler: rateLimit(options as Parameters<typeof rateLimit>[0]), wiring: 'adapter' };
    }
    case 'hono-rate-limiter': {
      // Its README's setup: keyGenerator from the connection info; in memory its default MemoryStore,
      // on Redis its RedisStore, which 0.5 ships in the package itself (@hono-rate-limiter/redis 0.1.4, the separate one, declares hono-rate-limiter ^0.2.1 as its peer).
      const { rateLimiter, RedisStore: HrlRedisStore } = require('hono-rate-limiter');
      const options: Record<string, unknown> = { windowMs: spec.windowMs, limit: spec.limit, keyGenerator: key };
      if (spec.store !== 'memory') options.store = new HrlRedisStore({ client: honoRateLimiterClient(need(redis)), prefix: `${spec.prefix}:` });
      return { handler: rateLimiter(options) as MiddlewareHandler, wiring: 'n/a' };
    }
    case 'redis-floor':
    case 'redis-floor-turn': {
      const floor = redisFloor(spec, redis);
      const handler: MiddlewareHandler = (_c, next) =>
        new Promise<void>((resolve, reject) => floor((error) => (error ? reject(error) : resolve()))).then(next);
      return { handler, wiring: 'n/a' };
    }
    default:
      throw new Error(`${spec.kind} has no Hono contender`);
  }
}
