// On the memory store a decision needs no waiting: the request goes on to its handler in the same
// turn (no promise in between), which is what keeps an admitted request as cheap as the bare route.
import { getRequestListener } from '@hono/node-server';
import { getConnInfo } from '@hono/node-server/conninfo';
import { MemoryStore } from '@floodgate/core';
import { expectServedInOneTurn, listenOnLoopback, turnMarker } from '@floodgate/adapter-suites';
import { Hono } from 'hono';
import { rateLimit } from '../src';

it.each([
  ['with no limiter (the control: Hono itself stays in one turn)', false],
  ['with rateLimit on the memory store', true],
])('an admitted request reaches its handler in the same turn %s', async (_name, limited) => {
  const app = new Hono<{ Variables: { marker: { sync: boolean } } }>();
  app.use((c, next) => {
    c.set('marker', turnMarker());
    return next();
  });
  if (limited) app.use(rateLimit({ store: new MemoryStore(), limit: 2, windowMs: 60_000, getConnInfo }));
  app.get('/', (c) => c.json({ sync: c.get('marker').sync }));
  const running = await listenOnLoopback(getRequestListener(app.fetch), []);
  try {
    await expectServedInOneTurn(running.port, limited);
  } finally {
    await running.close();
  }
});
