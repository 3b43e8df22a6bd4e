// On the memory store a decision needs no waiting: the request goes on to its handler in the same
// turn (no promise in between), which is what keeps an admitted request as cheap as the bare route.
import express, { type Request } from 'express';
import { MemoryStore } from '@floodgate/core';
import { expectServedInOneTurn, listenOnLoopback, turnMarker } from '@floodgate/adapter-suites';
import { rateLimit } from '../src';

type Marked = Request & { marker?: { sync: boolean } };

it.each([
  ['with no limiter (the control: Express itself stays in one turn)', false],
  ['with rateLimit on the memory store', true],
])('an admitted request reaches its handler in the same turn %s', async (_name, limited) => {
  const app = express();
  app.use((req: Marked, _res, next) => {
    req.marker = turnMarker();
    next();
  });
  if (limited) app.use(rateLimit({ store: new MemoryStore(), limit: 2, windowMs: 60_000 }));
  app.get('/', (req: Marked, res) => void res.json({ sync: req.marker!.sync }));
  const running = await listenOnLoopback(app, []);
  try {
    await expectServedInOneTurn(running.port, limited);
  } finally {
    await running.close();
  }
});
