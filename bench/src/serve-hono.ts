// The Hono server of the bench: Hono on @hono/node-server, a limiter app-wide (one mount at '/') or per route.
import type { Redis } from 'ioredis';
import type { Server } from 'node:http';
import { honoLimiter } from './limiters';
import { BODY, closing, isSingle, listening, type Started } from './serve-common';
import type { ServerSpec, Wiring } from './types';

export async function serveHono(spec: ServerSpec, redis: Redis | undefined): Promise<Started> {
  // require(), not import(): @floodgate/hono is compiled to CommonJS here and reads Hono's route
  // helper through require('hono/route'); an import() would load Hono's ESM build beside it, two
  // copies whose request objects do not know each other (matchedRoutes then throws).
  const { Hono } = require('hono') as typeof import('hono');
  const { serve } = require('@hono/node-server') as typeof import('@hono/node-server');
  const app = new Hono();
  const wirings: Wiring[] = [];
  const single = isSingle(spec);
  for (const { path, limiter } of spec.mounts) {
    if (limiter.kind === 'none') {
      app.get(path, (c) => c.text(BODY));
      continue;
    }
    const built = honoLimiter(limiter, redis, spec.trustProxy ?? false);
    wirings.push(built.wiring);
    // One limiter at '/': app-wide (`app.use`), as users mount it. Several: one per route.
    if (single) app.use(built.handler).get(path, (c) => c.text(BODY));
    else app.get(path, built.handler, (c) => c.text(BODY));
  }
  const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }) as Server;
  return { port: await listening(server), wiring: wirings[0] ?? 'n/a', close: closing(server) };
}
