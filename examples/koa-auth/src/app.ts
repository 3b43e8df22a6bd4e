// The koa-auth example app: a login limited by failed attempts per account and per IP, locking out step by step and failing closed; customer routes that fail open.
import { createHash, timingSafeEqual } from 'node:crypto';
import { bodyParser } from '@koa/bodyparser';
import Router from '@koa/router';
import { MemoryStore, RedisStore, type LockoutOptions, type Logger } from '@floodgate/core';
import { rateLimit } from '@floodgate/koa';
import type { Redis } from 'ioredis';
import Koa, { type Context } from 'koa';

export interface AppOptions {
  /** The ioredis client both limiters' RedisStore uses. The app never closes it.
   * Without one the app counts in memory (MemoryStore): per process, lost on restart. */
  redis?: Redis;
  /** RedisStore's deadline per call (default 100 ms). Tests on a loaded machine give more, so that every decision is Redis's own. */
  redisTimeoutMs?: number;
  /** Key prefix in Redis. Default 'fg'. Tests give each run its own. */
  prefix?: string;
  /** Where Floodgate reports a failing store (once per change, not per request). Default console. */
  logger?: Logger;
  /** The growing lock-out after repeated refusals. Default LOCKOUT; tests shorten it. */
  lockout?: LockoutOptions;
  /** The window of FAILURES_PER_ACCOUNT. Default '15m'; tests shorten it to see the lock-out grow past it. */
  accountWindowMs?: number;
  /** Addresses never refused (your office's egress, a monitoring probe). Default none. */
  allowList?: string[];
  /** Trust one proxy in front (X-Forwarded-For's last entry is the client). Default false: clients connect directly. */
  trustProxy?: boolean;
}

/** Failed logins per account name in 15 minutes, whichever IPs they come from. */
export const FAILURES_PER_ACCOUNT = 5;
/** Failed logins per client IP in an hour, whichever accounts they guess (password spraying). */
export const FAILURES_PER_IP = 20;
/** After the first refusal, the caller is locked out for 1 minute, then 2, 4, ... up to an hour. */
export const LOCKOUT = { after: 1, baseMs: '1m', maxMs: '1h' } as const;
/** Requests per minute for one caller on each customer-facing route. */
export const PUBLIC_LIMIT = 100;
/** The demo accounts. A real app checks a password hash from its user store. */
export const DEMO_USERS: Readonly<Record<string, string>> = { demo: 'correct horse battery staple', alice: 'open sesame' };
export const DEMO_USER = { username: 'demo', password: DEMO_USERS.demo };

const digest = (text: string) => createHash('sha256').update(text).digest();

function credentialsMatch(username: unknown, password: unknown): boolean {
  if (typeof username !== 'string' || typeof password !== 'string') return false;
  // Compare digests in constant time, so the answer's timing does not leak how much of a guess was right.
  const expected = Object.hasOwn(DEMO_USERS, username) ? DEMO_USERS[username] : undefined;
  const passwordOk = timingSafeEqual(digest(password), digest(expected ?? ''));
  return expected !== undefined && passwordOk;
}

/**
 * The account a login names, normalised so 'Demo ' and 'demo' are one account; none sent skips the
 * per-account key. Anything else the client put there (an array, an object, null) goes to the
 * limiter as sent, which answers it 400 (docs/auth.md): never skipped, never a fresh account bucket.
 */
function accountOf(ctx: Context): unknown {
  const username = (ctx.request.body as { username?: unknown } | undefined)?.username;
  return typeof username === 'string' ? username.trim().toLowerCase() : username;
}

export function createApp(options: AppOptions): Koa {
  const store = options.redis ? new RedisStore({ client: options.redis, timeoutMs: options.redisTimeoutMs }) : new MemoryStore();
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

  // Login (docs/auth.md): only failed attempts count, per client IP and per account name, decided
  // together; a success is free and clears its account's count; a caller refused again and again
  // waits longer each time; and when Redis cannot count, the route answers 503 rather than give a
  // guesser an unlimited window. Keyed on the IP, never on a header the client writes. The limiter
  // runs after the body parser (it reads the account name), whose 4 KB cap keeps a refusal cheap.
  // The app-level limiter sees this route has its own and steps aside: one decision per request.
  router.post(
    '/login',
    bodyParser({ enableTypes: ['json'], jsonLimit: '4kb' }),
    rateLimit({
      ...shared,
      limit: FAILURES_PER_IP,
      windowMs: '1h',
      countOnly: 'failed',
      extraKeys: [{ name: 'account', key: accountOf, limit: FAILURES_PER_ACCOUNT, windowMs: options.accountWindowMs ?? '15m' }],
      resetOnSuccess: ['account'],
      lockout: options.lockout ?? LOCKOUT,
      failMode: 'closed',
      apiKeyHeaders: false,
      allowList: options.allowList,
    }),
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
  // Behind a proxy, app.proxy = true and maxIpsCount = the number of proxies, so that ctx.ip is the
  // client's, not the proxy's, and not an address the client wrote itself.
  app.proxy = options.trustProxy ?? false;
  app.maxIpsCount = 1;
  app.use(publicLimiter);
  app.use(router.routes());
  app.use(router.allowedMethods());
  return app;
}
