// ESM JavaScript consumer: import each packed package (named and default exports) and run real requests through each adapter.
import express from 'express';
import Fastify from 'fastify';
import Koa from 'koa';
import Router from '@koa/router';
import { Redis } from 'ioredis';
import * as core from '@floodgate/core';
import { rateLimit as expressRateLimit } from '@floodgate/express';
import fastifyRateLimit from '@floodgate/fastify';
import { rateLimit as koaRateLimit } from '@floodgate/koa';
import { Hono } from 'hono';
import { serve } from '@hono/node-server';
import { getConnInfo } from '@hono/node-server/conninfo';
import { rateLimit as honoRateLimit } from '@floodgate/hono';
import { probe, listenOn, redisRoundTrip, report } from './probe.cjs';

const PACKAGES = ['@floodgate/core', '@floodgate/express', '@floodgate/fastify', '@floodgate/koa', '@floodgate/hono'];
const resolved = Object.fromEntries(PACKAGES.map((name) => [name, new URL(import.meta.resolve(name)).pathname]));

const ex = express();
ex.use(expressRateLimit({ limit: 2, windowMs: '1m' }));
ex.get('/hello', (req, res) => res.json({ remaining: req.rateLimit.remaining }));
const exServer = await listenOn((port, host, cb) => ex.listen(port, host, cb));
const expressSeen = await probe(exServer.base, '/hello', exServer.close);

const fa = Fastify();
await fa.register(fastifyRateLimit, { limit: 2, windowMs: '1m' });
fa.get('/hello', async (request) => ({ remaining: request.rateLimit.remaining }));
const faBase = await fa.listen({ port: 0, host: '127.0.0.1' });
const fastifySeen = await probe(faBase, '/hello', () => fa.close());

const ko = new Koa();
const router = new Router();
router.get('/hello', (ctx) => {
  ctx.body = { remaining: ctx.state.rateLimit.remaining };
});
ko.use(koaRateLimit({ limit: 2, windowMs: '1m' }));
ko.use(router.routes());
const koServer = await listenOn((port, host, cb) => ko.listen(port, host, cb));
const koaSeen = await probe(koServer.base, '/hello', koServer.close);

const ho = new Hono();
ho.use(honoRateLimit({ limit: 2, windowMs: '1m', getConnInfo }));
ho.get('/hello', (c) => c.json({ remaining: c.get('rateLimit').remaining }));
const hoServer = await listenOn((port, hostname, cb) => serve({ fetch: ho.fetch, port, hostname }, cb));
const honoSeen = await probe(hoServer.base, '/hello', hoServer.close);

const redis = process.env.REDIS_URL ? await redisRoundTrip(core, Redis, process.env.REDIS_URL) : null;
report({ style: 'esm', resolved, express: expressSeen, fastify: fastifySeen, koa: koaSeen, hono: honoSeen, redis });
