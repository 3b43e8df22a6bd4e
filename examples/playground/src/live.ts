// The live panel's routes: one Express, one Fastify and one Koa app, each behind its Floodgate adapter, mounted by path prefix.
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import express from 'express';
import Fastify from 'fastify';
import Koa from 'koa';
import Router from '@koa/router';
import { rateLimit as expressRateLimit } from '@floodgate/express';
import { rateLimit as fastifyRateLimit } from '@floodgate/fastify';
import { rateLimit as koaRateLimit } from '@floodgate/koa';
import { resolveLimiterOptions } from '@floodgate/core/internal';

/** What every live route is limited to: small, so a few clicks reach a 429. Each route has its own MemoryStore. */
export const LIVE_OPTIONS = { limit: 5, windowMs: '10s' } as const;

/** The same options as the library resolves them (defaults filled in), for the page to describe. */
export function describeLiveLimit(): { algorithm: string; limit: number; windowMs: number } {
  const { algorithm, limit, windowMs } = resolveLimiterOptions({ ...LIVE_OPTIONS }).limits[0];
  return { algorithm, limit, windowMs };
}

const shown = `{ limit: ${LIVE_OPTIONS.limit}, windowMs: '${LIVE_OPTIONS.windowMs}' }`;

export interface LiveRoute {
  framework: 'express' | 'fastify' | 'koa';
  title: string;
  /** Every path under `prefix` goes to this framework's app. */
  prefix: string;
  path: string;
  usage: string;
}

export const LIVE_ROUTES: readonly LiveRoute[] = [
  {
    framework: 'express',
    title: 'Express',
    prefix: '/api/express/',
    path: '/api/express/hello',
    usage: `app.get('/api/express/hello', rateLimit(${shown}), handler)`,
  },
  {
    framework: 'fastify',
    title: 'Fastify',
    prefix: '/api/fastify/',
    path: '/api/fastify/hello',
    usage: `await fastify.register(rateLimit, ${shown})`,
  },
  {
    framework: 'koa',
    title: 'Koa',
    prefix: '/api/koa/',
    path: '/api/koa/hello',
    usage: `router.get('/api/koa/hello', rateLimit(${shown}), handler)`,
  },
];

export interface LiveApps {
  /** The request listener for the framework that owns this path, if any. */
  handlerFor(path: string): RequestListener | undefined;
  close(): Promise<void>;
}

function hello(framework: string) {
  return { framework, message: `hello from ${framework}, behind Floodgate`, at: new Date().toISOString() };
}

/**
 * Builds the three apps. None of them listens: the playground's one HTTP server hands each request to
 * the app that owns its path prefix, so the page, the live routes and the API share one origin (no CORS,
 * every response header readable by the page's fetch).
 */
export async function createLiveApps(): Promise<LiveApps> {
  const expressApp = express();
  expressApp.get('/api/express/hello', expressRateLimit({ ...LIVE_OPTIONS }), (_req, res) => {
    res.json(hello('express'));
  });

  // Fastify owns its server; serverFactory hands us its request handler, and that server never listens.
  let fastifyHandler: RequestListener | undefined;
  const fastify = Fastify({
    serverFactory: (handler) => {
      fastifyHandler = handler as RequestListener;
      return createServer(handler);
    },
  });
  await fastify.register(fastifyRateLimit, { ...LIVE_OPTIONS });
  fastify.get('/api/fastify/hello', async () => hello('fastify'));
  await fastify.ready();

  const koa = new Koa();
  const router = new Router();
  router.get('/api/koa/hello', koaRateLimit({ ...LIVE_OPTIONS }), (ctx) => {
    ctx.body = hello('koa');
  });
  koa.use(router.routes()).use(router.allowedMethods());
  const koaHandler = koa.callback();

  const handlers: Record<LiveRoute['framework'], RequestListener> = {
    express: expressApp as unknown as RequestListener,
    fastify: (req: IncomingMessage, res: ServerResponse) => fastifyHandler!(req, res),
    koa: koaHandler,
  };
  return {
    handlerFor(path) {
      const route = LIVE_ROUTES.find((r) => path.startsWith(r.prefix));
      return route ? handlers[route.framework] : undefined;
    },
    async close() {
      await fastify.close();
    },
  };
}
