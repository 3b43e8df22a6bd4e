// The hono-api example app: every route limited per API key (else per client IP), a costly report route, a login that counts failures and fails closed, an exempt health route.
import { getConnInfo } from '@hono/node-server/conninfo';
import { MemoryStore, RedisStore, type Logger } from '@floodgate/core';
import { rateLimit } from '@floodgate/hono';
import { Hono } from 'hono';
import type { Redis } from 'ioredis';

export interface AppOptions {
  /** The ioredis client the RedisStore uses; the app never closes it. Without one the app counts in memory (per process). */
  redis?: Redis;
  /** RedisStore's deadline per call (default 100 ms). Tests on a loaded machine give more, so that every decision is Redis's own. */
  redisTimeoutMs?: number;
  /** Key prefix in Redis. Default 'fg'. Tests give each run its own. */
  prefix?: string;
  /** Where Floodgate reports a failing store (once per change, not per request). Default console. */
  logger?: Logger;
  /** The proxies in front of the app (IPs, CIDR ranges): only their X-Forwarded-For is read. Default none. */
  trustProxy?: string[];
  /** The API keys this app issued, each to its account. Default DEMO_KEYS. A real app looks keys up in its database. */
  apiKeys?: Readonly<Record<string, string>>;
}

/** The demo's issued API keys. A key nobody issued is limited by its client IP, as if it sent none. */
export const DEMO_KEYS: Readonly<Record<string, string>> = { 'demo-key': 'demo' };

/** Requests per minute for one caller on each route. */
export const LIMIT = 100;
/** What one report costs, in requests of that budget. */
export const REPORT_COST = 10;
/** Failed logins per client IP in 15 minutes (successful ones are free). */
export const LOGIN_FAILURES = 5;
/** The demo login. A real app checks a password hash from its user store. */
export const DEMO_PASSWORD = 'correct horse battery staple';

export function createApp(options: AppOptions = {}): Hono {
  const apiKeys = options.apiKeys ?? DEMO_KEYS;
  // Only a verified key escapes its IP's bucket: Floodgate caches the answer (and a negative one).
  const resolveKey = async (key: string) => (Object.hasOwn(apiKeys, key) ? { account: apiKeys[key] } : null);
  const store = options.redis ? new RedisStore({ client: options.redis, timeoutMs: options.redisTimeoutMs }) : new MemoryStore();
  // getConnInfo: the client IP from @hono/node-server's socket (use the helper of your runtime elsewhere).
  const limiter = rateLimit({ store, prefix: options.prefix, logger: options.logger, limit: LIMIT, windowMs: '1m', getConnInfo, trustProxy: options.trustProxy, resolveKey });

  const app = new Hono();
  app.use(limiter);
  // Never limited: the load balancer's probe reads the limiter's own health.
  app.get('/health', limiter.route(false), (c) => {
    const health = limiter.health();
    return c.json(health, health.healthy ? 200 : 503);
  });
  app.get('/widgets/:id', (c) => c.json({ id: c.req.param('id'), remaining: c.get('rateLimit')?.remaining }));
  app.post('/reports', limiter.route({ cost: REPORT_COST }), (c) => c.json({ report: 'queued', remaining: c.get('rateLimit')?.remaining }));
  // A login refuses (503) rather than guess when Redis is down; only failed attempts count.
  app.post('/login', limiter.route({ limit: LOGIN_FAILURES, windowMs: '15m', countOnly: 'failed', failMode: 'closed' }), async (c) => {
    const body = await c.req.json<{ password?: unknown }>().catch(() => ({ password: undefined }));
    return body.password === DEMO_PASSWORD ? c.json({ ok: true }) : c.json({ ok: false }, 401);
  });
  return app;
}
