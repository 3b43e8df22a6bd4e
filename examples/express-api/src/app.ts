// The express-api example app: one Floodgate limiter on Redis for the whole API, keyed on the API key (else the IP).
import { MemoryStore, RedisStore, type Duration, type Logger } from '@floodgate/core';
import { rateLimit } from '@floodgate/express';
import express, { type Express } from 'express';
import type { Redis } from 'ioredis';
import { createMetrics, type Metrics } from './metrics';

export interface AppOptions {
  /** The ioredis client the limiter's RedisStore uses. The app never closes it.
   * Without one the app counts in memory (MemoryStore): per process, lost on restart. */
  redis?: Redis;
  /** How long the RedisStore waits for Redis (RedisStoreOptions.timeoutMs). Default Floodgate's, 100 ms. */
  redisTimeoutMs?: number;
  /** Key prefix in Redis. Default 'fg'. Tests give each run its own. */
  prefix?: string;
  /** Where Floodgate reports a failing store. Default console. */
  logger?: Logger;
  /**
   * The API keys this app issued, key -> account (a real app looks them up in its database).
   * Default: one demo key, 'demo'.
   */
  apiKeys?: Readonly<Record<string, string>>;
  /** OpenTelemetry meter provider and Prometheus exporter served at /metrics. Default: a new pair. */
  metrics?: Metrics;
  /** The store's circuit breaker (see FailureOptions.breaker). Default Floodgate's. */
  breaker?: { failureThreshold?: number; coolDownMs?: number };
  /**
   * The bearer token of the admin routes (`POST /admin/overrides`, `GET /admin/overrides`); without
   * one they answer 404. Default: none (the start script sets ADMIN_TOKEN, or 'dev-admin').
   */
  adminToken?: string;
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

/** Requests per minute for each caller on each route. */
export const LIMIT = 100;
/** Units one report draws: reports are ten times as costly to build as a read. */
export const REPORT_COST = 10;
/** Tokens a day for each caller on the token-metered completion route. */
export const TOKENS_PER_DAY = 1_000;
/** What a completion reserves when it names no max_tokens. */
export const DEFAULT_ESTIMATE = 256;

/** A stand-in for a model: four tokens per word of the prompt, at most max_tokens when given. */
function complete(prompt: string, maxTokens: number | undefined): { text: string; tokens: number } {
  const words = prompt.split(/\s+/).filter(Boolean).length;
  const tokens = Math.min(words * 4, maxTokens ?? Infinity);
  return { text: 'lorem '.repeat(Math.ceil(tokens / 4)).trim(), tokens };
}

/**
 * The API. Every route has its own bucket per caller (`GET /widgets/:id` is one bucket, whatever
 * the id). The caller is its verified API key (`Authorization: Bearer <key>` or `x-api-key`),
 * hashed before it reaches Redis; a request without one, or with a key nobody issued, is limited by its IP.
 */
export function createApp(options: AppOptions): Express {
  const store = options.redis ? new RedisStore({ client: options.redis, timeoutMs: options.redisTimeoutMs }) : new MemoryStore();
  const metrics = options.metrics ?? createMetrics();
  const limiter = rateLimit({
    meterProvider: metrics.meterProvider,
    breaker: options.breaker,
    limit: LIMIT,
    windowMs: '1m',
    store,
    prefix: options.prefix,
    logger: options.logger,
    resolveKey: keyDirectory(options.apiKeys ?? { demo: 'demo-account' }),
    // Operators may change one caller's limits (or a route's) at runtime: every decision reads the
    // caller's override in its own Redis call, so a change reaches every instance at the next request.
    overrides: true,
    limitCeiling: 10_000,
    onOverride: (event) => (options.logger ?? console).warn(`[admin] override ${event.action} for ${event.target} on ${event.scope || 'every route'}`),
  });

  const app = express();
  // Behind a proxy, set 'trust proxy' to it so that req.ip (the IP fallback) is the client's, not the proxy's.
  app.set('trust proxy', false);
  app.use(limiter);
  app.use(express.json({ limit: '16kb' }));

  app.get('/health', limiter.route(false), (_req, res) => {
    res.json({ ok: true });
  });

  // 503 while the store's circuit breaker is open (requests get the failure mode's answer): a
  // load balancer or an on-call engineer sees the outage, and the body says which store and why.
  app.get('/healthz', limiter.route(false), (_req, res) => {
    const health = limiter.health();
    res.status(health.healthy ? 200 : 503).json(health);
  });

  // Prometheus scrapes the limiter's metrics here, on the app's own port.
  app.get('/metrics', limiter.route(false), (req, res) => {
    metrics.exporter.getMetricsRequestHandler(req, res);
  });

  // Runtime limits (docs/runtime-limits.md): an admin sets, clears and lists overrides. Body:
  // { ip | apiKey, route: 'GET /widgets', limit: 0, ttl: '1h', reason } (no ip or apiKey: the whole
  // route; { all: true }: everything). A real app puts its own auth in front of this.
  const admin = (req: express.Request, res: express.Response, next: express.NextFunction) =>
    options.adminToken && req.get('authorization') === `Bearer ${options.adminToken}` ? next() : void res.status(404).end();
  app.post('/admin/overrides', limiter.route(false), admin, async (req, res) => {
    const b = (req.body ?? {}) as { ip?: string; apiKey?: string; route?: string; all?: true; limit?: number; ttl?: string; reason?: string; clear?: boolean };
    const target = { ip: b.ip, apiKey: b.apiKey, route: b.route, all: b.all };
    try {
      if (b.clear) {
        await limiter.clearOverride(target);
        res.status(204).end();
      } else {
        res.status(201).json(await limiter.override(target, Number(b.limit), { ttlMs: (b.ttl ?? '1h') as Duration, reason: b.reason }));
      }
    } catch (error) {
      res.status(400).json({ error: (error as Error).message });
    }
  });
  app.get('/admin/overrides', limiter.route(false), admin, async (_req, res) => {
    res.json({ overrides: await limiter.listOverrides() });
  });

  app.get('/widgets', (req, res) => {
    res.json({ widgets: [{ id: 1 }, { id: 2 }], remaining: req.rateLimit?.remaining ?? null });
  });

  app.get('/widgets/:id', (req, res) => {
    res.json({ id: Number(req.params.id) });
  });

  // The same limiter and store, but this route draws REPORT_COST units from its bucket per request.
  app.post('/reports', limiter.route({ cost: REPORT_COST }), (req, res) => {
    const body = req.body as { from?: unknown; to?: unknown } | undefined;
    res.status(201).json({ report: { from: body?.from ?? null, to: body?.to ?? null, status: 'queued' } });
  });

  // Token-metered (docs/quotas.md#reserve-then-settle): reserve the most the request can generate,
  // then settle what was generated. A completion that names no max_tokens may generate more than
  // it reserved: the caller then owes the difference, and is refused until the day pays it back.
  const maxTokensOf = (body: unknown) => {
    const asked = Number((body as { max_tokens?: unknown } | undefined)?.max_tokens);
    return Number.isInteger(asked) && asked > 0 ? Math.min(asked, TOKENS_PER_DAY) : undefined;
  };
  app.post(
    '/v1/complete',
    limiter.route({ limit: TOKENS_PER_DAY, windowMs: '1d', cost: (req) => maxTokensOf(req.body) ?? DEFAULT_ESTIMATE, settle: { maxCost: 2 * TOKENS_PER_DAY } }),
    async (req, res) => {
      const body = req.body as { prompt?: unknown; max_tokens?: unknown } | undefined;
      const out = complete(String(body?.prompt ?? ''), maxTokensOf(body));
      const settled = await req.floodgate?.settle(out.tokens);
      res.json({ text: out.text, tokens: out.tokens, charged: settled?.charged ?? null });
    },
  );

  // The caller's own usage of the token quota (and of the report route), keyed as the limiter keys it.
  app.get('/usage', limiter.usageRoute(['POST /v1/complete', 'POST /reports']));

  return app;
}
