// The fastify-api example app: the Floodgate plugin on Redis, with each route's limit in its config.rateLimit.
import { MemoryStore, RedisStore, type Logger } from '@floodgate/core';
import { rateLimit } from '@floodgate/fastify';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';

export interface AppOptions {
  /** The ioredis client the plugin's RedisStore uses. The app never closes it.
   * Without one the app counts in memory (MemoryStore): per process, lost on restart. */
  redis?: Redis;
  /** Key prefix in Redis. Default 'fg'. Tests give each run its own. */
  prefix?: string;
  /** RedisStore's deadline per call (default 100 ms). Tests on a loaded machine give more, so that every decision is Redis's own. */
  redisTimeoutMs?: number;
  /** Where Floodgate reports a failing store. Default console. */
  logger?: Logger;
  /**
   * The API keys this app issued, key -> account (a real app looks them up in its database).
   * Default: one demo key, 'demo'.
   */
  apiKeys?: Readonly<Record<string, string>>;
}

/**
 * Verifies an API key: its account, or null for a key nobody issued. Only a verified key gets a
 * bucket of its own; a request with an invented key is limited by its IP, so rotating made-up keys
 * buys no fresh budget (docs/security.md). Floodgate caches the answers and skips the lookup for a
 * caller it is already refusing.
 */
function keyDirectory(apiKeys: Readonly<Record<string, string>>) {
  return async (apiKey: string) => (Object.hasOwn(apiKeys, apiKey) ? { account: apiKeys[apiKey] } : null);
}

/** The plugin's default: requests per minute for each caller on each route. */
export const LIMIT = 100;
/** /search is costly for the database: 10 requests per 10 seconds. */
export const SEARCH_LIMIT = 10;
/** Units one report draws. */
export const REPORT_COST = 10;

/**
 * The API. The plugin's options are the default for every route; a route's `config.rateLimit` is
 * merged over them once, when the route is registered. Callers are keyed on their verified API
 * key (`Authorization: Bearer <key>` or `x-api-key`), else their IP.
 */
export async function createApp(options: AppOptions): Promise<FastifyInstance> {
  const app = Fastify();
  await app.register(rateLimit, {
    limit: LIMIT,
    windowMs: '1m',
    store: options.redis ? new RedisStore({ client: options.redis, timeoutMs: options.redisTimeoutMs }) : new MemoryStore(),
    prefix: options.prefix,
    logger: options.logger,
    resolveKey: keyDirectory(options.apiKeys ?? { demo: 'demo-account' }),
  });

  app.get('/items', async () => ({ items: [{ id: 1 }, { id: 2 }] }));

  app.get<{ Params: { id: string } }>('/items/:id', async (request) => ({ id: Number(request.params.id) }));

  // A tighter limit and a shorter window for this route only.
  app.get<{ Querystring: { q?: string } }>(
    '/search',
    { config: { rateLimit: { limit: SEARCH_LIMIT, windowMs: '10s' } } },
    async (request) => ({ query: request.query.q ?? '', hits: [] }),
  );

  // The default limit, but each report draws REPORT_COST units.
  app.post<{ Body: { from?: string; to?: string } }>(
    '/reports',
    { config: { rateLimit: { cost: REPORT_COST } } },
    async (request, reply) => reply.code(201).send({ report: { from: request.body?.from ?? null, status: 'queued' } }),
  );

  app.get('/health', { config: { rateLimit: false } }, async () => ({ ok: true }));

  return app;
}
