// The app on workerd with RedisStore over HTTP: Hono, @floodgate/hono, @upstash/redis against the REST server the test starts (its url and token in the Worker's env).
import { RedisStore, type CoalesceMode } from '@floodgate/core';
import { rateLimit } from '@floodgate/hono';
import { Redis } from '@upstash/redis/cloudflare';
import { Hono } from 'hono';

interface Env {
  REST_URL: string;
  REST_TOKEN: string;
  /** 'false', 'turn', or 'default' (the option left out): how the store coalesces (docs/edge.md#redis-over-http). */
  COALESCE: string;
  /** The limiter's key prefix: each run its own keys on the one redis-server. */
  PREFIX: string;
}

/** 100 an hour for everyone on /race (one subject). */
export const HTTP_LIMITS = { race: 100 } as const;

let app: Hono<{ Bindings: Env }> | undefined;
function appFor(env: Env): Hono<{ Bindings: Env }> {
  if (app) return app;
  const client = new Redis({ url: env.REST_URL, token: env.REST_TOKEN, retry: { retries: 0 }, enableTelemetry: false, enableAutoPipelining: false });
  const coalesce: CoalesceMode | undefined = env.COALESCE === 'default' ? undefined : env.COALESCE === 'turn' ? 'turn' : false;
  const store = new RedisStore({ client, ...(coalesce === undefined ? {} : { coalesce }), timeoutMs: 10_000 });
  app = new Hono<{ Bindings: Env }>();
  app.use('/race', rateLimit({ store, limit: HTTP_LIMITS.race, windowMs: '1h', key: () => 'one-shared-subject', prefix: env.PREFIX, failMode: 'closed', instances: 1 }));
  app.get('/race', (c) => c.text('ok'));
  return app;
}

export default {
  fetch: (request: Request, env: Env, ctx: unknown) => appFor(env).fetch(request, env, ctx as never),
};
