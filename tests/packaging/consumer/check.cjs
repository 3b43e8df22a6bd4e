// CommonJS JavaScript consumer: require() each packed package and run real requests through each adapter.
'use strict';
const express = require('express');
const Fastify = require('fastify');
const Koa = require('koa');
const Router = require('@koa/router');
const { Redis } = require('ioredis');
const core = require('@floodgate/core');
const { rateLimit: expressRateLimit } = require('@floodgate/express');
const { rateLimit: koaRateLimit } = require('@floodgate/koa');
const { Hono } = require('hono');
const { serve } = require('@hono/node-server');
const { getConnInfo } = require('@hono/node-server/conninfo');
const { rateLimit: honoRateLimit } = require('@floodgate/hono');
const { probe, listenOn, redisRoundTrip, report } = require('./probe.cjs');

const PACKAGES = ['@floodgate/core', '@floodgate/express', '@floodgate/fastify', '@floodgate/koa', '@floodgate/hono'];

async function main() {
  const resolved = Object.fromEntries(PACKAGES.map((name) => [name, require.resolve(name)]));

  const ex = express();
  ex.use(expressRateLimit({ limit: 2, windowMs: '1m' }));
  ex.get('/hello', (req, res) => res.json({ remaining: req.rateLimit.remaining }));
  const exServer = await listenOn((port, host, cb) => ex.listen(port, host, cb));
  const expressSeen = await probe(exServer.base, '/hello', exServer.close);

  // The way CommonJS Fastify apps register plugins: the whole module (Fastify unwraps its default).
  const fa = Fastify();
  await fa.register(require('@floodgate/fastify'), { limit: 2, windowMs: '1m' });
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
  report({ style: 'cjs', resolved, express: expressSeen, fastify: fastifySeen, koa: koaSeen, hono: honoSeen, redis });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
