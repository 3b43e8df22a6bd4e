// Child process under load: one HTTP server on 127.0.0.1 with the limiters of a ServerSpec (argv[2], JSON).
import { Redis } from 'ioredis';
import type { AddressInfo } from 'node:net';
import { expressLimiter, fastifyLimiter, koaLimiter } from './limiters';
import { BODY, closing, isSingle, listening, type Started } from './serve-common';
import { serveHono } from './serve-hono';
import { serveNest } from './serve-nestjs';
import type { Framework, ServerSpec, Wiring } from './types';

/** One server per framework: the compiler asks for a new framework's here. */
const SERVERS: Record<Framework, (spec: ServerSpec, redis: Redis | undefined) => Promise<Started>> = {
  express: serveExpress,
  fastify: serveFastify,
  koa: serveKoa,
  'nestjs-express': (spec, redis) => serveNest('express', spec, redis),
  'nestjs-fastify': (spec, redis) => serveNest('fastify', spec, redis),
  hono: serveHono,
};

async function serveExpress(spec: ServerSpec, redis: Redis | undefined): Promise<Started> {
  const express = (await import('express')).default;
  const app = express();
  // Many-caller runs: one proxy hop trusted, so req.ip is X-Forwarded-For's address (every contender keys on it).
  if (spec.trustProxy) app.set('trust proxy', 'loopback');
  const wirings: Wiring[] = [];
  const single = isSingle(spec);
  for (const { path, limiter } of spec.mounts) {
    if (limiter.kind === 'none') {
      app.get(path, (_req, res) => void res.send(BODY));
      continue;
    }
    const built = expressLimiter(limiter, redis);
    wirings.push(built.wiring);
    // One limiter at '/': app-wide, as users mount it. Several: one per route.
    if (single) app.use(built.handler);
    app.get(path, ...(single ? [] : [built.handler]), (_req, res) => void res.send(BODY));
  }
  const server = app.listen(0, '127.0.0.1');
  return { port: await listening(server), wiring: wirings[0] ?? 'n/a', close: closing(server) };
}

async function serveFastify(spec: ServerSpec, redis: Redis | undefined): Promise<Started> {
  const fastify = (await import('fastify')).default;
  const app = fastify({ logger: false, ...(spec.trustProxy ? { trustProxy: '127.0.0.1' } : {}) });
  const wirings: Wiring[] = [];
  for (const { path, limiter } of spec.mounts) {
    await app.register(async (scope) => {
      if (limiter.kind !== 'none') wirings.push(await fastifyLimiter(scope, limiter, redis));
      scope.get(path, async () => BODY);
    });
  }
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { port: (app.server.address() as AddressInfo).port, wiring: wirings[0] ?? 'n/a', close: () => app.close() };
}

async function serveKoa(spec: ServerSpec, redis: Redis | undefined): Promise<Started> {
  const Koa = (await import('koa')).default;
  const app = new Koa(spec.trustProxy ? { proxy: true, maxIpsCount: 1 } : {});
  const wirings: Wiring[] = [];
  const single = isSingle(spec);
  const routes = new Map<string, ((ctx: import('koa').Context, next: () => Promise<void>) => unknown) | null>();
  for (const { path, limiter } of spec.mounts) {
    if (limiter.kind === 'none') {
      routes.set(path, null);
      continue;
    }
    const built = koaLimiter(limiter, redis);
    wirings.push(built.wiring);
    if (single) app.use(built.handler);
    routes.set(path, single ? null : built.handler);
  }
  app.use(async (ctx, next) => {
    if (!routes.has(ctx.path)) return next(); // 404
    const limiter = routes.get(ctx.path);
    if (limiter) await limiter(ctx, async () => void (ctx.body = BODY));
    else ctx.body = BODY;
  });
  const server = app.listen(0, '127.0.0.1');
  return { port: await listening(server), wiring: wirings[0] ?? 'n/a', close: closing(server) };
}

async function start(spec: ServerSpec): Promise<Started> {
  const redis =
    spec.redisPort === undefined
      ? undefined
      : new Redis({
          host: '127.0.0.1',
          port: spec.redisPort,
          maxRetriesPerRequest: 1,
          // As Floodgate's docs ask (a script must never run twice); it changes nothing for the peers.
          autoResendUnfulfilledCommands: false,
          enableAutoPipelining: spec.autoPipelining ?? false,
        });
  redis?.on('error', (error) => console.error(`redis: ${error.message}`));
  return SERVERS[spec.framework](spec, redis);
}

const spec = JSON.parse(process.argv[2] ?? '{}') as ServerSpec;
// The parent owns this process: when it goes, so do we. SIGTERM exits cleanly so --cpu-prof is written.
process.on('disconnect', () => process.exit(0));
process.on('SIGTERM', () => process.exit(0));
// The profiler's clock (V8 TimeTicks, CLOCK_MONOTONIC in µs), so the parent can cut warm-up out of a profile.
process.on('message', (m: { type?: string }) => {
  if (m?.type === 'mark') process.send?.({ type: 'mark', monotonicUs: Number(process.hrtime.bigint() / 1000n) });
  // CPU time used so far: per-request CPU is a steadier measure than req/s on a shared machine.
  if (m?.type === 'usage') {
    const { user, system } = process.cpuUsage();
    process.send?.({ type: 'usage', cpuUs: user + system });
  }
});
start(spec).then(
  ({ port, wiring }) => process.send?.({ type: 'ready', port, wiring }),
  (error: Error) => {
    console.error(error);
    process.send?.({ type: 'error', message: error.stack ?? error.message }, () => process.exit(1));
  },
);
