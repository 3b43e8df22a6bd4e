// The client IP on Hono: the runtime's connection info, X-Forwarded-For only from proxies named in trustProxy, and the core's fallback when there is none.
import { request as httpRequest } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import { getConnInfo } from '@hono/node-server/conninfo';
import { listenOnLoopback } from '@floodgate/adapter-suites';
import { MemoryStore } from '@floodgate/core';
import { Hono } from 'hono';
import type { ConnInfo } from 'hono/conninfo';
import { rateLimit, type RateLimitOptions } from '../src';
import { serve } from './serve';

async function app(options: RateLimitOptions) {
  const kinds: string[] = [];
  const app = new Hono();
  app.use(rateLimit({ store: new MemoryStore(), algorithm: 'gcra', burst: 2, refillPerSecond: 2 / 3_600, onDecision: (e) => kinds.push(e.identity), ...options }));
  app.get('/r', (c) => c.text('ok'));
  const send = await serve(app);
  const statuses = async (all: Record<string, string>[]) => {
    const out: number[] = [];
    for (const headers of all) out.push((await send('/r', { headers })).status);
    return out;
  };
  return { statuses, kinds, app };
}
const xff = (value: string) => ({ 'x-forwarded-for': value });

it('keys on the address getConnInfo reports, and ignores X-Forwarded-For without trustProxy', async () => {
  const a = await app({ getConnInfo });
  expect(await a.statuses([xff('198.51.100.1'), xff('198.51.100.2'), xff('198.51.100.3')])).toEqual([200, 200, 429]);
  expect(a.kinds).toEqual(['ip', 'ip', 'ip']);
});

it('reads X-Forwarded-For right to left through the trusted proxies only', async () => {
  const a = await app({ getConnInfo, trustProxy: ['127.0.0.1', '::1', '10.0.0.0/8'] });
  // The client wrote the left-most entry itself; 10.1.2.3 is a trusted proxy; 203.0.113.9 is the client.
  const chain = (spoofed: string) => xff(`${spoofed}, 203.0.113.9, 10.1.2.3`);
  expect(await a.statuses([chain('1.1.1.1'), chain('2.2.2.2'), chain('3.3.3.3')])).toEqual([200, 200, 429]);
  // Every hop trusted: the left-most one is the client.
  expect(await a.statuses([xff('10.9.9.9, 10.1.2.3'), xff('10.9.9.9'), xff('10.9.9.9')])).toEqual([200, 200, 429]);
});

it('does not read X-Forwarded-For from a connection that is not a trusted proxy', async () => {
  const a = await app({ getConnInfo, trustProxy: ['10.0.0.0/8'] });
  expect(await a.statuses([xff('198.51.100.1'), xff('198.51.100.2'), xff('198.51.100.3')])).toEqual([200, 200, 429]);
});

/** One GET from a chosen loopback address (Linux routes all of 127.0.0.0/8 to lo), as two clients would. */
function getFrom(port: number, localAddress: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path: '/r', localAddress }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

it('on @hono/node-server without getConnInfo, keys each client on its connection address, with no FG_IP_MISSING', async () => {
  const warnings: string[] = [];
  const kinds: string[] = [];
  const app = new Hono();
  app.use(rateLimit({ store: new MemoryStore(), algorithm: 'gcra', burst: 2, refillPerSecond: 2 / 3_600, logger: { warn: (m) => void warnings.push(m), error: () => undefined }, onDecision: (e) => kinds.push(e.identity) }));
  app.get('/r', (c) => c.text('ok'));
  const running = await listenOnLoopback(getRequestListener(app.fetch), []);
  try {
    const a = [await getFrom(running.port, '127.0.0.1'), await getFrom(running.port, '127.0.0.1'), await getFrom(running.port, '127.0.0.1')];
    // Another client (another address) has its own budget: not the ip:unknown bucket every client shared.
    const b = [await getFrom(running.port, '127.0.0.2'), await getFrom(running.port, '127.0.0.2'), await getFrom(running.port, '127.0.0.2')];
    expect({ a, b }).toEqual({ a: [200, 200, 429], b: [200, 200, 429] });
    expect(kinds).toEqual(['ip', 'ip', 'ip', 'ip', 'ip', 'ip']);
    expect(warnings).toEqual([]);
  } finally {
    await running.close();
  }
});

it('on a runtime with no Node connection (app.request()) or with a getConnInfo that cannot tell, requests share the ip:unknown bucket and FG_IP_MISSING is written once', async () => {
  const warnings: string[] = [];
  const logger = { warn: (m: string) => void warnings.push(m), error: () => undefined };
  const none = await app({ logger });
  const statuses: number[] = [];
  for (const headers of [{}, xff('198.51.100.1'), {}]) statuses.push((await none.app.request('/r', { headers })).status);
  expect(statuses).toEqual([200, 200, 429]);
  expect(none.kinds).toEqual(['unknown', 'unknown', 'unknown']);
  // The X-Forwarded-For with no proxy trusted is a warning of its own (the shared warning suite's), once.
  expect(warnings.map((w) => /FG_[A-Z_]+/.exec(w)?.[0])).toEqual(['FG_IP_MISSING', 'FG_PROXY_HEADER_UNTRUSTED']);
  // A helper that throws (another runtime's, or app.request() with no server behind it) is the same case.
  const broken = await app({ logger, getConnInfo: (): ConnInfo => { throw new TypeError("Cannot read properties of undefined (reading 'incoming')"); } });
  expect(await broken.statuses([{}, {}, {}])).toEqual([200, 200, 429]);
  const viaRequest = await broken.app.request('/r');
  expect(viaRequest.status).toBe(429);
});

it('takes getConnInfo and trustProxy per route over the app-level ones', async () => {
  const app = new Hono();
  const limiter = rateLimit({ store: new MemoryStore(), algorithm: 'gcra', burst: 1, refillPerSecond: 1 / 3_600, getConnInfo });
  app.get('/behind', limiter.route({ trustProxy: ['127.0.0.1', '::1'] }), (c) => c.text('ok'));
  const send = await serve(app);
  expect((await send('/behind', { headers: xff('203.0.113.1') })).status).toBe(200);
  expect((await send('/behind', { headers: xff('203.0.113.2') })).status).toBe(200);
  expect((await send('/behind', { headers: xff('203.0.113.2') })).status).toBe(429);
});
