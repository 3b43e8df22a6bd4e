// The app every edge runtime serves: Hono with @floodgate/hono on the memory store; a route keyed on the client IP (the runtime's getConnInfo) and one keyed on a header.
import { MemoryStore } from '@floodgate/core';
import { rateLimit, type ClientIpOptions } from '@floodgate/hono';
import { Hono } from 'hono';

/** Limits the test counts on: 3 a minute per IP on /limited, 2 a minute per user on /by-user, 100 an hour for everyone on /race. */
export const LIMITS = { limited: 3, byUser: 2, race: 100 } as const;

export function makeApp(getConnInfo: ClientIpOptions['getConnInfo']): Hono {
  const app = new Hono();
  const store = new MemoryStore();
  app.use('/limited', rateLimit({ store, limit: LIMITS.limited, windowMs: '1m', getConnInfo }));
  app.get('/limited', (c) => c.text('ok'));
  app.use('/by-user', rateLimit({ store, limit: LIMITS.byUser, windowMs: '1m', key: (c) => c.req.header('x-user') }));
  app.get('/by-user', (c) => c.text(`hello ${c.req.header('x-user') ?? ''}`));
  app.use('/race', rateLimit({ store, limit: LIMITS.race, windowMs: '1h', key: () => 'one-shared-subject' }));
  app.get('/race', (c) => c.text('ok'));
  return app;
}
