// The shedding panel's routes: one route per priority class behind @floodgate/express's `shedding` (the real LoadShedder on this process's event loop), each burning the CPU the page asks for.
import type { RequestListener } from 'node:http';
import express from 'express';
import { MemoryStore, type HttpRateLimitOptions } from '@floodgate/core';
import { rateLimit } from '@floodgate/express';

/**
 * The shedder's options: the library's utilisation threshold (0.9), a 200 ms sample instead of
 * 500 ms so that a run of a few seconds shows each step, and a timer late by 1 s (not 200 ms)
 * before lateness alone counts: on a laptop busy with a browser and a build, the panel should show
 * what its own CPU-bound load does, not what the rest of the machine does to this process.
 */
export const SHEDDING_OPTIONS = { sampleMs: 200, delayMs: 1000 } as const;
export const SHED_PREFIX = '/api/shed/';
export const SHED_STATE_PATH = '/api/shed/state';
/** The most CPU one request may ask for (`?work=ms`): a bound on what the page (or anyone) can make it burn. */
export const MAX_WORK_MS = 50;

export type Priority = NonNullable<HttpRateLimitOptions['priority']>;
/** The classes, in the order they are shed. */
export const PRIORITIES: readonly Priority[] = ['background', 'default', 'critical'];

/** Keeps this process's event loop busy for `ms`: what a CPU-bound handler (JSON, templates, crypto) does. */
function burn(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // busy on purpose
  }
}

/**
 * The app that owns /api/shed/. `GET /api/shed/<class>?work=ms` is a route of that priority class
 * that burns `work` ms of CPU (0 to 50) and answers with the shedder's state; while the shedder
 * finds this process overloaded it answers 503 instead, background first, then default, critical
 * never. The load the page makes is real: the handlers' own CPU on this process's event loop.
 * `GET /api/shed/state` is `health().shedding`.
 */
export function createSheddingApp(): RequestListener {
  const app = express();
  // The rate limit is out of reach (a million a minute): every refusal here is the shedder's.
  const limiter = rateLimit({ store: new MemoryStore(), limit: 1_000_000, windowMs: 60_000, shedding: SHEDDING_OPTIONS, key: () => 'playground' });
  app.get(SHED_STATE_PATH, (_req, res) => void res.set('cache-control', 'no-store').json(limiter.health().shedding));
  for (const priority of PRIORITIES) {
    app.get(`${SHED_PREFIX}${priority}`, limiter.route({ priority }), (req, res) => {
      const raw = Number(req.query.work ?? 0);
      const work = Number.isFinite(raw) ? Math.min(MAX_WORK_MS, Math.max(0, raw)) : 0;
      burn(work);
      res.set('cache-control', 'no-store').json({ priority, work, shedding: limiter.health().shedding });
    });
  }
  return app as unknown as RequestListener;
}
