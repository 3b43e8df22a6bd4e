// The app on workerd with the Durable Object store: Hono, @floodgate/hono, limits decided by FloodgateDurableObject (one object per shard of subjects).
import { DurableObjectStore, type DurableObjectNamespaceLike } from '@floodgate/core';
import { rateLimit } from '@floodgate/hono';
import { Hono } from 'hono';
import { getConnInfo } from 'hono/cloudflare-workers';

export { FloodgateDurableObject } from '@floodgate/core';

interface Env {
  FLOODGATE: DurableObjectNamespaceLike;
}

/** 100 an hour for everyone on /race (one subject), 3 a minute per client IP on /limited. */
export const DO_LIMITS = { race: 100, limited: 3 } as const;

// The binding is known per request only: the store and the middleware are made at the first one, then kept.
let app: Hono<{ Bindings: Env }> | undefined;
function appFor(env: Env): Hono<{ Bindings: Env }> {
  if (app) return app;
  const store = new DurableObjectStore({ namespace: env.FLOODGATE, shards: 4 });
  app = new Hono<{ Bindings: Env }>();
  app.use('/race', rateLimit({ store, limit: DO_LIMITS.race, windowMs: '1h', key: () => 'one-shared-subject', failMode: 'closed' }));
  app.get('/race', (c) => c.text('ok'));
  app.use('/limited', rateLimit({ store, limit: DO_LIMITS.limited, windowMs: '1m', getConnInfo, failMode: 'closed' }));
  app.get('/limited', (c) => c.text('ok'));
  return app;
}

export default {
  fetch: (request: Request, env: Env, ctx: unknown) => appFor(env).fetch(request, env, ctx as never),
};
