// The in-flight panel's route: one caller's slow requests behind @floodgate/express's `concurrency` option, and what the handler itself counts.
import type { RequestListener } from 'node:http';
import express from 'express';
import { MemoryStore } from '@floodgate/core';
import { rateLimit } from '@floodgate/express';

/** The caller's in-flight limit, and the rate limit it composes with (generous: the panel is about slots, not rate). */
export const INFLIGHT_LIMIT = { inFlight: 5, limit: 600, windowMs: 60_000 } as const;
export const INFLIGHT_PATH = '/api/inflight/slow';
export const INFLIGHT_STATE_PATH = '/api/inflight/state';
/** How long the handler holds a request when the page does not say: long enough to click "abort". */
export const INFLIGHT_HOLD_MS = { default: 4000, min: 100, max: 20_000 } as const;

/** A page names itself with this header so that two tabs (or a test and a person) are two callers. */
const CALLER_HEADER = 'x-playground-caller';
const CALLER = /^[A-Za-z0-9-]{1,40}$/;
/** Callers whose counts are kept (the oldest forgotten first): a bound on what a stream of made-up names can cost. */
const MAX_CALLERS = 1000;

/** What the handler counts for one caller: its requests in the handler now, and the most at once so far. */
export interface InflightCount {
  inHandler: number;
  maxInHandler: number;
}

const callerOf = (raw: unknown): string => (typeof raw === 'string' && CALLER.test(raw) ? raw : 'other');

/**
 * The app that owns /api/inflight/. `GET /api/inflight/slow?ms=N` is held N ms (or until the client
 * goes away) behind an in-flight limit of 5 per caller, so a 6th request at once gets 429 with
 * `qu="concurrent-requests"` in RateLimit-Policy (draft-10). The handler counts its own requests
 * per caller, independently of the limiter: `GET /api/inflight/state?caller=...` reports them.
 * The caller is the `x-playground-caller` header (a page's random id), else the bucket 'other'.
 */
export function createInflightApp(): RequestListener {
  const counts = new Map<string, InflightCount>();
  const countOf = (caller: string): InflightCount => {
    let c = counts.get(caller);
    if (!c) {
      if (counts.size >= MAX_CALLERS) counts.delete(counts.keys().next().value!);
      counts.set(caller, (c = { inHandler: 0, maxInHandler: 0 }));
    }
    return c;
  };
  const app = express();
  app.get(
    INFLIGHT_PATH,
    rateLimit({
      store: new MemoryStore(),
      limit: INFLIGHT_LIMIT.limit,
      windowMs: INFLIGHT_LIMIT.windowMs,
      concurrency: { limit: INFLIGHT_LIMIT.inFlight },
      headers: ['draft-10'],
      key: (req) => callerOf(req.get(CALLER_HEADER)),
    }),
    (req, res) => {
      const raw = Number(req.query.ms ?? INFLIGHT_HOLD_MS.default);
      const ms = Number.isFinite(raw) ? Math.min(INFLIGHT_HOLD_MS.max, Math.max(INFLIGHT_HOLD_MS.min, Math.round(raw))) : INFLIGHT_HOLD_MS.default;
      const count = countOf(callerOf(req.get(CALLER_HEADER)));
      count.inHandler++;
      count.maxInHandler = Math.max(count.maxInHandler, count.inHandler);
      let left = false;
      const leave = () => {
        if (left) return;
        left = true;
        count.inHandler--;
        clearTimeout(timer);
      };
      const timer = setTimeout(() => {
        leave();
        res.json({ heldMs: ms });
      }, ms);
      // The client aborted: the handler stops too (the adapter frees the lease on the same 'close').
      res.on('close', leave);
    },
  );
  app.get(INFLIGHT_STATE_PATH, (req, res) => {
    const c = counts.get(callerOf(req.query.caller));
    res.set('cache-control', 'no-store').json(c ?? { inHandler: 0, maxInHandler: 0 });
  });
  return app as unknown as RequestListener;
}
