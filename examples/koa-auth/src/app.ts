// The koa-auth example app: a login that fails closed when Redis is down, and customer-facing routes that fail open.
import { createHash, timingSafeEqual } from 'node:crypto';
import { bodyParser } from '@koa/bodyparser';
import Router from '@koa/router';
import { RedisStore, type Logger } from '@floodgate/core';
import { rateLimit } from '@floodgate/koa';
import type { Redis } from 'ioredis';
import Koa from 'koa';

export interface AppOptions {
  /** The ioredis client both limiters' RedisStore uses. The app never closes it. */
  redis: Redis;
  /** Key prefix in Redis. Default 'fg'. Tests give each run its own. */
  prefix?: string;
  /** Where Floodgate reports a failing store (once per change, not per request). Default console. */
  logger?: Logger;
}

/** Login attempts per minute for one client IP. */
export const LOGIN_LIMIT = 5;
/** Requests per minute for one caller on each customer-facing route. */
export const PUBLIC_LIMIT = 100;
/** The demo account. A real app checks a password hash from its user store. */
export const DEMO_USER = { username: 'demo', password: 'correct horse battery staple' };

const digest = (text: string) => createHash('sha256').update(text).digest();

function credentialsMatch(username: unknown, password: unknown): boolean {
  if (typeof username !== 'string' || typeof password !== 'string') return false;
  // Compare digests in constant time, so the answer's timing does not leak how much of a guess was right.
  const userOk = timingSafeEqual(digest(username), digest(DEMO_USER.username));
  const passwordOk = timingSafeEqual(digest(password), digest(DEMO_USER.password));
  return userOk && passwordOk;
}

export function createApp(options: AppOptions): Koa {
  const store = new RedisStore({ client: options.redis });
  const shared = { store, prefix: options.prefix, logger: options.logger };

  // Customer-facing routes: if Redis is down, serving without a limit beats refusing every customer.
  const publicLimiter = rateLimit({ ...shared, limit: PUBLIC_LIMIT, windowMs: '1m', failMode: 'open' });

  const router = new Router();
  router.get('/products', (ctx) => {
    ctx.body = { products: [{ id: 1, name: 'umbrella' }, { id: 2, name: 'boots' }] };
  });
  router.get('/products/:id', (ctx) => {
    ctx.body = { id: Number(ctx.params.id) };
  });

  // Login: a guessing attack must never get an unlimited window, so when Redis cannot count the
  // attempts the route answers 503 with Retry-After. It is keyed on the client IP only
  // (apiKeyHeaders: false): a header the client writes must never pick the bucket it is counted in. The limiter runs before the body is parsed, so
  // a refused attempt costs almost nothing. The app-level limiter sees this route has its own and
  // steps aside: one decision per request.
  router.post(
    '/login',
    rateLimit({ ...shared, limit: LOGIN_LIMIT, windowMs: 60_000, failMode: 'closed', apiKeyHeaders: false }),
    bodyParser({ enableTypes: ['json'], jsonLimit: '4kb' }),
    (ctx) => {
      const body = ctx.request.body as { username?: unknown; password?: unknown } | undefined;
      if (!credentialsMatch(body?.username, body?.password)) {
        ctx.status = 401;
        ctx.body = { error: 'invalid username or password' };
        return;
      }
      ctx.body = { token: `demo-token-${Date.now().toString(36)}` };
    },
  );

  const app = new Koa();
  // Behind a proxy, set app.proxy = true (and maxIpsCount) so that ctx.ip is the client's, not the proxy's.
  app.proxy = false;
  app.use(publicLimiter);
  app.use(router.routes());
  app.use(router.allowedMethods());
  return app;
}
