// On the memory store a decision needs no waiting: the request goes on to the next middleware in
// the same turn (no promise in between), which is what keeps an admitted request as cheap as the bare route.
import Koa from 'koa';
import { MemoryStore } from '@floodgate/core';
import { expectServedInOneTurn, listenOnLoopback, turnMarker } from '@floodgate/adapter-suites';
import { rateLimit } from '../src';

it.each([
  ['with no limiter (the control: Koa itself stays in one turn)', false],
  ['with rateLimit on the memory store', true],
])('an admitted request reaches the next middleware in the same turn %s', async (_name, limited) => {
  const app = new Koa();
  app.use((ctx, next) => {
    ctx.state.marker = turnMarker();
    return next();
  });
  if (limited) app.use(rateLimit({ store: new MemoryStore(), limit: 2, windowMs: 60_000 }));
  app.use((ctx) => {
    ctx.body = { sync: (ctx.state.marker as { sync: boolean }).sync };
  });
  const running = await listenOnLoopback(app.callback(), []);
  try {
    await expectServedInOneTurn(running.port, limited);
  } finally {
    await running.close();
  }
});
