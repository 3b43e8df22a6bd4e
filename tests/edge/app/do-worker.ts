// The app on workerd with the Durable Object store: Hono, @floodgate/hono, limits decided by FloodgateDurableObject (one object per shard of subjects).
import { DurableObjectStore, type DurableObjectNamespaceLike } from '@floodgate/core';
import { rateLimit } from '@floodgate/hono';
import { Hono } from 'hono';
import { getConnInfo } from 'hono/cloudflare-workers';

export { FloodgateDurableObject } from '@floodgate/core';

interface Env {
  FLOODGATE: DurableObjectNamespaceLike;
  /** Set by the tests only: turns on the objects' test clock and the /__object/<name> route below. */
  FLOODGATE_UNSAFE_TEST_CLOCK?: string;
}

/** Test routes: a test's store reaches one object under /__object/<its name> (an object: a worker module exports handlers and objects, not strings). */
export const DO_TEST_ROUTES = { object: '/__object/' } as const;
const OBJECT_ROUTE = DO_TEST_ROUTES.object;

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

/**
 * Tests only: forwards the request to the object named in the path, through the binding's real stub.
 * The tests' store reaches the objects this way, by an awaited dispatchFetch, instead of through
 * miniflare's Node-side binding proxy, whose synchronous calls (Atomics.wait, then read the reply)
 * lose a reply on a loaded machine and answer every later call with the one before it.
 */
async function toObject(request: Request, env: Env): Promise<Response> {
  const name = decodeURIComponent(new URL(request.url).pathname.slice(OBJECT_ROUTE.length));
  const stub = env.FLOODGATE.get(env.FLOODGATE.idFromName(name) as never);
  return (await stub.fetch('https://floodgate.invalid/batch', { method: 'POST', body: await request.text(), headers: { 'content-type': 'application/json' } })) as unknown as Response;
}

export default {
  fetch: (request: Request, env: Env, ctx: unknown) =>
    env.FLOODGATE_UNSAFE_TEST_CLOCK === 'true' && new URL(request.url).pathname.startsWith(OBJECT_ROUTE)
      ? toObject(request, env)
      : appFor(env).fetch(request, env, ctx as never),
};
