// On the memory store a decision needs no waiting: the request goes on to its handler in the same
// turn (no promise in between), which is what keeps an admitted request as cheap as the bare route.
import express, { type Request } from 'express';
import { MemoryStore } from '@floodgate/core';
import { listenOnLoopback } from '@floodgate/adapter-suites';
import { rateLimit } from '../src';

type Flagged = Request & { flag?: { sync: boolean } };

/** An app whose handler reports whether it ran in the same turn as a middleware placed before the limiter. */
function app(limited: boolean) {
  const a = express();
  a.use((req: Flagged, _res, next) => {
    const flag = { sync: true };
    queueMicrotask(() => (flag.sync = false));
    req.flag = flag;
    next();
  });
  if (limited) a.use(rateLimit({ store: new MemoryStore(), limit: 2, windowMs: 60_000 }));
  a.get('/', (req: Flagged, res) => void res.json({ sync: req.flag!.sync }));
  return a;
}

it.each([
  ['with no limiter (the control: Express itself stays in one turn)', false],
  ['with rateLimit on the memory store', true],
])('an admitted request reaches its handler in the same turn %s', async (_name, limited) => {
  const running = await listenOnLoopback(app(limited), []);
  try {
    const res = await fetch(`http://127.0.0.1:${running.port}/`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ sync: true });
    if (limited) expect(res.headers.get('ratelimit-remaining')).toBe('1');
  } finally {
    await running.close();
  }
});
