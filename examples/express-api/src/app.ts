// The express-api example app: one Floodgate limiter on Redis for the whole API, keyed on the API key (else the IP).
import { MemoryStore, RedisStore, type Logger } from '@floodgate/core';
import { rateLimit } from '@floodgate/express';
import express, { type Express } from 'express';
import type { Redis } from 'ioredis';
import { createMetrics, type Metrics } from './metrics';

export interface AppOptions {
  /** The ioredis client the limiter's RedisStore uses. The app never closes it.
   * Without one the app counts in memory (MemoryStore): per process, lost on restart. */
  redis?: Redis;
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

/**
 * The API. Every route has its own bucket per caller (`GET /widgets/:id` is one bucket, whatever
 * the id). The caller is its verified API key (`Authorization: Bearer <key>` or `x-api-key`),
 * hashed before it reaches Redis; a request without one, or with a key nobody issued, is limited by its IP.
 */
export function createApp(options: AppOptions): Express {
  const store = options.redis ? new RedisStore({ client: options.redis }) : new MemoryStore();
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

  return app;
}
