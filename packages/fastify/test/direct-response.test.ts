// Fastify: the blocked caller's 429 is written straight to Node; onSend hooks are skipped, onResponse still runs.
import { runDirectResponseSuite } from '@floodgate/adapter-suites';
import { fastifyHarness } from './harness';

runDirectResponseSuite(fastifyHarness);

// The direct 429 skips merging the reply's headers when nothing was set (issue #44): a header set on
// Node's response (reply.raw.setHeader) by an earlier hook, with none on the reply, still goes out
// (Node's writeHead merges them), and Floodgate's own names still win.
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { MemoryStore } from '@floodgate/core';
import { rateLimit } from '../src';

it('a header an earlier hook set on reply.raw alone goes out on the direct 429', async () => {
  const app = Fastify();
  app.addHook('onRequest', (_request, reply, done) => {
    reply.raw.setHeader('X-Raw', 'yes');
    reply.raw.setHeader('Retry-After', '99999');
    done();
  });
  await app.register(rateLimit, { store: new MemoryStore(), limit: 1, windowMs: '1m', retryAfterJitterMs: 0 });
  app.get('/r', async () => 'ok');
  await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/r`;
    expect((await fetch(url)).status).toBe(200);
    const limited = await fetch(url);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('x-raw')).toBe('yes');
    expect(limited.headers.get('ratelimit-remaining')).toBe('0');
    // Floodgate's own name wins over the same name set earlier (at most two windows, not 99999 s).
    expect(Number(limited.headers.get('retry-after'))).toBeLessThanOrEqual(120);
  } finally {
    await app.close();
  }
});
