// TypeScript ESM consumer: type-checked against the packed `import` types, then run as emitted ESM.
import express from 'express';
import { fastify } from 'fastify';
import Koa from 'koa';
import Router from '@koa/router';
import { Redis } from 'ioredis';
import * as core from '@floodgate/core';
import { MemoryStore, type Decision } from '@floodgate/core';
import { rateLimit as expressRateLimit, type RateLimitMiddleware } from '@floodgate/express';
import fastifyRateLimit, { type RouteRateLimitConfig } from '@floodgate/fastify';
import { rateLimit as koaRateLimit, type RateLimitOptions as KoaOptions } from '@floodgate/koa';
import type { Server } from 'node:http';
import { Hono } from 'hono';
import { serve } from '@hono/node-server';
import { getConnInfo } from '@hono/node-server/conninfo';
import { rateLimit as honoRateLimit, type RateLimitMiddleware as HonoMiddleware } from '@floodgate/hono';
import { probe, listenOn, redisRoundTrip, report } from './probe.cjs';

/** Never called: each line must be a type error, which proves the types are real, not `any`. */
export function typeErrors(): void {
  // @ts-expect-error limit is a number
  expressRateLimit({ limit: 'many' });
  // @ts-expect-error no such hook
  const route: RouteRateLimitConfig = { hook: 'onSend' };
  // @ts-expect-error no such fail mode
  const options: KoaOptions = { failMode: 'sometimes' };
  // @ts-expect-error getConnInfo is a function of the Hono context
  honoRateLimit({ getConnInfo: 'node' });
  // @ts-expect-error a Decision's remaining is number | null
  const remaining: string = ({} as Decision).remaining;
  void [route, options, remaining];
}

const store = new MemoryStore();
const ex = express();
const limiter: RateLimitMiddleware = expressRateLimit({ limit: 2, windowMs: '1m', store });
ex.use(limiter);
ex.get('/hello', (req, res) => {
  const decision: Decision | undefined = req.rateLimit; // from @floodgate/express's Express.Request augmentation
  res.json({ remaining: decision?.remaining ?? null });
});
const exServer = await listenOn((port, host, cb) => ex.listen(port, host, cb));
const expressSeen = await probe(exServer.base, '/hello', exServer.close);

const fa = fastify();
await fa.register(fastifyRateLimit, { limit: 10, windowMs: '1m' });
const hello: RouteRateLimitConfig = { limit: 2, windowMs: '1m' };
fa.get('/hello', { config: { rateLimit: hello } }, async (request) => ({ remaining: request.rateLimit?.remaining ?? null }));
const faBase = await fa.listen({ port: 0, host: '127.0.0.1' });
const fastifySeen = await probe(faBase, '/hello', () => fa.close());

const ko = new Koa();
const router = new Router();
router.get('/hello', (ctx) => {
  ctx.body = { remaining: ctx.state.rateLimit?.remaining ?? null };
});
ko.use(koaRateLimit({ limit: 2, windowMs: '1m', failMode: 'open' }));
ko.use(router.routes());
const koServer = await listenOn((port, host, cb) => ko.listen(port, host, cb));
const koaSeen = await probe(koServer.base, '/hello', koServer.close);

const ho = new Hono();
const honoLimiter: HonoMiddleware = honoRateLimit({ limit: 2, windowMs: '1m', getConnInfo });
ho.use(honoLimiter);
ho.get('/hello', (c) => {
  const decision: Decision | undefined = c.get('rateLimit'); // from @floodgate/hono's ContextVariableMap augmentation
  return c.json({ remaining: decision?.remaining ?? null });
});
const hoServer = await listenOn((port, hostname, cb) => serve({ fetch: ho.fetch, port, hostname }, cb) as Server);
const honoSeen = await probe(hoServer.base, '/hello', hoServer.close);

const redis = process.env.REDIS_URL ? await redisRoundTrip(core, Redis, process.env.REDIS_URL) : null;
const resolved = Object.fromEntries(
  ['@floodgate/core', '@floodgate/express', '@floodgate/fastify', '@floodgate/koa', '@floodgate/hono'].map((name) => [name, new URL(import.meta.resolve(name)).pathname]),
);
report({ style: 'ts-esm', resolved, express: expressSeen, fastify: fastifySeen, koa: koaSeen, hono: honoSeen, redis });
