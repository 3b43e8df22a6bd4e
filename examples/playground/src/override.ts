// The override panel's routes: one limited route read with `overrides: true`, and the endpoints that set, clear and list an override for the page's caller through the middleware's override API (#45).
import type { RequestListener } from 'node:http';
import express from 'express';
import { FloodgateError, MemoryStore, type OverrideRecord } from '@floodgate/core';
import { rateLimit } from '@floodgate/express';

/** The route's own limit, and the ceiling an override may not pass (`limitCeiling`). */
export const OVERRIDE_LIMIT = { limit: 10, windowMs: 60_000, ceiling: 50 } as const;
export const OVERRIDE_PREFIX = '/api/override/';
export const OVERRIDE_PATH = '/api/override/hello';
/** The route as Express matches it: the override's `route`. */
export const OVERRIDE_ROUTE = `GET ${OVERRIDE_PATH}`;
/** What the page may ask for: an override's time to live, ms. */
export const OVERRIDE_TTL_MS = { default: 60_000, min: 1000, max: 120_000 } as const;

/** A page names itself with this header so that two tabs (or a test and a person) are two callers. */
const CALLER_HEADER = 'x-playground-caller';
const CALLER = /^[A-Za-z0-9-]{1,40}$/;

const callerOf = (raw: unknown): string | undefined => (typeof raw === 'string' && CALLER.test(raw) ? raw : undefined);

/** What the page is told about an override: the limit set and when it ends (this process's clock). */
export interface OverrideView {
  limit: number;
  reason?: string;
  endsAt: number;
}

function viewOf(record: OverrideRecord): OverrideView {
  return { limit: Math.min(...Object.values(record.limits)), reason: record.reason, endsAt: record.setAt + record.ttlMs };
}

/** The request's integer in [min, max], or undefined (the page sends numbers; anything else is a 400). */
function intIn(value: unknown, min: number, max: number): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max ? value : undefined;
}

/**
 * The app that owns /api/override/. `GET /api/override/hello` is limited to 10 a minute per caller
 * (the `x-playground-caller` header, a page's random id; else the bucket 'other'), on a MemoryStore
 * read with `overrides: true`. For the caller named by that header:
 * - `POST /api/override/set` `{ limit, ttlMs }` calls `limiter.override({ key, route }, limit, { ttlMs })`:
 *   the next request is decided, and its RateLimit headers written, with that limit (0 refuses all);
 * - `POST /api/override/clear` calls `limiter.clearOverride({ key, route })`: the route's own limit again;
 * - `GET /api/override/state` answers the caller's override from `limiter.listOverrides()`, or null.
 * The count already used stays across each change (docs/runtime-limits.md).
 */
export function createOverrideApp(): RequestListener {
  const limiter = rateLimit({
    store: new MemoryStore(),
    limit: OVERRIDE_LIMIT.limit,
    windowMs: OVERRIDE_LIMIT.windowMs,
    overrides: true,
    limitCeiling: OVERRIDE_LIMIT.ceiling,
    key: (req) => callerOf(req.get(CALLER_HEADER)) ?? 'other',
  });
  const app = express();
  app.get(OVERRIDE_PATH, limiter, (_req, res) => void res.json({ hello: 'from the override panel' }));

  const body = express.json({ limit: '2kb' });
  const caller = (req: express.Request, res: express.Response, next: express.NextFunction) => {
    if (callerOf(req.get(CALLER_HEADER))) return next();
    res.status(400).json({ error: `send ${CALLER_HEADER}: 1 to 40 letters, digits or '-'` });
  };
  const target = (req: express.Request) => ({ key: callerOf(req.get(CALLER_HEADER))!, route: OVERRIDE_ROUTE });
  const fail = (res: express.Response, error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    res.status(error instanceof FloodgateError ? 400 : 500).json({ error: message });
  };

  app.post(`${OVERRIDE_PREFIX}set`, body, caller, async (req, res) => {
    const b = (req.body ?? {}) as { limit?: unknown; ttlMs?: unknown };
    const limit = intIn(b.limit, 0, OVERRIDE_LIMIT.ceiling);
    const ttlMs = b.ttlMs === undefined ? OVERRIDE_TTL_MS.default : intIn(b.ttlMs, OVERRIDE_TTL_MS.min, OVERRIDE_TTL_MS.max);
    if (limit === undefined || ttlMs === undefined) {
      res.status(400).json({
        error: `limit: a whole number from 0 to ${OVERRIDE_LIMIT.ceiling}; ttlMs: ${OVERRIDE_TTL_MS.min} to ${OVERRIDE_TTL_MS.max}`,
      });
      return;
    }
    try {
      const record = await limiter.override(target(req), limit, { ttlMs, reason: 'playground' });
      res.status(201).json({ override: viewOf(record) });
    } catch (error) {
      fail(res, error);
    }
  });
  app.post(`${OVERRIDE_PREFIX}clear`, caller, async (req, res) => {
    try {
      await limiter.clearOverride(target(req));
      res.status(204).end();
    } catch (error) {
      fail(res, error);
    }
  });
  app.get(`${OVERRIDE_PREFIX}state`, caller, async (req, res) => {
    try {
      const label = `key ${target(req).key}`;
      const mine = (await limiter.listOverrides()).find((r) => r.target === label && r.scope === OVERRIDE_ROUTE);
      res.set('cache-control', 'no-store').json({ override: mine ? viewOf(mine) : null });
    } catch (error) {
      fail(res, error);
    }
  });
  return app as unknown as RequestListener;
}
