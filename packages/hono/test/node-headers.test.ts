// On @hono/node-server the limiter reads joined request headers from Node's parsed ones, the same values the Web request's Headers would give, without asking it.
import { request as httpRequest } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import { listenOnLoopback, type RunningApp } from '@floodgate/adapter-suites';
import { MemoryStore } from '@floodgate/core';
import { Hono } from 'hono';
import { rateLimit } from '../src';

const running: RunningApp[] = [];
afterAll(() => Promise.all(running.splice(0).map((r) => r.close())));

/** An app with the limiter on GET /r; `asked` lists the names the Web request's Headers.get was asked for, `keys` the API keys resolveKey was given. */
async function start() {
  const asked: string[] = [];
  const keys: string[] = [];
  const app = new Hono();
  app.use(async (c, next) => {
    const headers = c.req.raw.headers;
    const get = headers.get.bind(headers);
    headers.get = (name: string) => (asked.push(name.toLowerCase()), get(name));
    await next();
  });
  app.use(rateLimit({ store: new MemoryStore(), limit: 100, windowMs: '1m', resolveKey: (key) => (keys.push(key), { account: key }) }));
  app.get('/r', (c) => c.text('ok'));
  const server = await listenOnLoopback(getRequestListener(app.fetch), []);
  running.push(server);
  const send = (headers: Record<string, string | string[]>) =>
    new Promise<number>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port: server.port, path: '/r', headers }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      });
      req.on('error', reject);
      req.end();
    });
  return { asked, keys, send };
}

it('asks the Web request for no header Node joins the same way (only authorization, which Node keeps the first of)', async () => {
  const { asked, send } = await start();
  expect(await send({ 'x-api-key': 'k1' })).toBe(200);
  expect(await send({ 'x-forwarded-for': '10.0.0.1' })).toBe(200);
  expect([...new Set(asked)]).toEqual(['authorization']);
});

it('reads a repeated header as the Web request joins it: two x-api-key lines are the key "a, b"', async () => {
  const { keys, send } = await start();
  expect(await send({ 'x-api-key': ['a', 'b'] })).toBe(200);
  expect(await send({ 'x-api-key': ' a, b ' })).toBe(200);
  // resolveKey is asked once per distinct key (its answers are cached): both requests carried "a, b".
  expect(keys).toEqual(['a, b']);
});
