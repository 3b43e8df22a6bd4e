// The clients panel's route: one limit with a lock-out for callers refused again and again, a bucket per client the page runs (well-behaved and hot-loop), behind @floodgate/express.
import type { RequestListener } from 'node:http';
import express from 'express';
import { rateLimit } from '@floodgate/express';

/** The limit both clients run against; each has its own bucket of it (keyed on the x-playground-client header). */
export const CLIENTS_LIMIT = { limit: 5, windowMs: 2000 } as const;
/**
 * What a refused caller pays, as many public APIs charge it: a lock-out of 4 s from the store's first
 * refusal, doubling with each refusal after it, up to 60 s (a refusal answered from the block cache is
 * not a new strike). A client that waits as the headers say is never refused and never pays it; one
 * that retries a 429 at once locks itself out (issue #46: the panel shows pacing winning, and why).
 */
export const CLIENTS_LOCKOUT = { after: 1, baseMs: 4000, maxMs: 60_000, forgetMs: 120_000 } as const;
export const CLIENTS_PATH = '/api/clients/work';
export const CLIENT_NAMES = ['well-behaved', 'hot-loop'] as const;

/**
 * The app that owns /api/clients/. Each client names itself in `x-playground-client` so that the two
 * loops do not share one budget (they come from one browser, one IP): the same limit, side by side.
 * Any other name shares the bucket 'other'. Both dialects go out, draft-6 and draft-10, as a server
 * in a migration would send them.
 */
export function createClientsApp(): RequestListener {
  const app = express();
  app.get(
    CLIENTS_PATH,
    rateLimit({
      ...CLIENTS_LIMIT,
      algorithm: 'fixed-window',
      headers: ['draft-6', 'draft-10'],
      lockout: CLIENTS_LOCKOUT,
      key: (req) => {
        const name = req.get('x-playground-client');
        return (CLIENT_NAMES as readonly string[]).includes(name ?? '') ? name : 'other';
      },
    }),
    (_req, res) => void res.json({ done: true }),
  );
  return app as unknown as RequestListener;
}
