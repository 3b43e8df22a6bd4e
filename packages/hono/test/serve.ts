// A Hono app served on @hono/node-server on a free loopback port, for this package's own tests; closed after the file.
import { getRequestListener } from '@hono/node-server';
import { listenOnLoopback, type RunningApp } from '@floodgate/adapter-suites';
import type { Hono } from 'hono';

const running: RunningApp[] = [];
afterAll(() => Promise.all(running.splice(0).map((r) => r.close())));

/** Serves `app`; the returned function sends one request to it by path. */
export async function serve(app: Hono<any, any, any>): Promise<(path: string, init?: RequestInit) => Promise<Response>> {
  const app_ = await listenOnLoopback(getRequestListener(app.fetch), []);
  running.push(app_);
  return (path, init) => fetch(`http://127.0.0.1:${app_.port}${path}`, init);
}
