// One header-name case per framework: Fastify sends its rate-limit headers in lower case on a 200 and on the 429 written straight to Node.
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { rateLimit } from '../src';

/** The header names exactly as they came over the wire (fetch would normalise them). */
function rawNames(port: number): Promise<{ status: number; names: string[] }> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path: '/hello' }, (res) => {
      res.resume();
      const names = res.rawHeaders.filter((_, i) => i % 2 === 0);
      res.on('end', () => resolve({ status: res.statusCode!, names }));
    })
      .on('error', reject)
      .end();
  });
}

it.each([true, false])('respondDirectly %s: the same lower-case names on the 200 and on the 429', async (respondDirectly) => {
  const app = Fastify();
  await app.register(rateLimit, { limit: 1, windowMs: '1m', respondDirectly });
  app.get('/hello', async () => 'hi');
  await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    const { port } = app.server.address() as AddressInfo;
    const ok = await rawNames(port);
    const limited = await rawNames(port);
    expect([ok.status, limited.status]).toEqual([200, 429]);
    const ours = (names: string[]) => names.filter((n) => /^(ratelimit|retry-after)/i.test(n));
    expect(ours(ok.names)).toEqual(['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset']);
    expect(ours(limited.names)).toEqual(['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'retry-after']);
  } finally {
    await app.close();
  }
});

// Issue #44: Floodgate's headers go straight into the reply's own headers object (where
// reply.header() keeps them), skipping reply.header()'s per-call lower-casing: a later hook sees
// them with getHeader and getHeaders, and a value it sets replaces Floodgate's as with reply.header().
it('writes its headers where reply.header() keeps them, without calling reply.header()', async () => {
  const app = Fastify();
  const calls: string[] = [];
  app.addHook('onRequest', (_request, reply, done) => {
    const header = reply.header.bind(reply);
    reply.header = ((name: string, value: unknown) => (calls.push(name), header(name, value))) as typeof reply.header;
    done();
  });
  await app.register(rateLimit, { limit: 5, windowMs: '1m' });
  app.get('/hello', async (_request, reply) => {
    const seen = { limit: reply.getHeader('RateLimit-Limit'), all: Object.keys(reply.getHeaders()).filter((n) => n.startsWith('ratelimit')) };
    reply.header('RateLimit-Remaining', 'mine');
    return seen;
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    const { port } = app.server.address() as AddressInfo;
    const res = await fetch(`http://127.0.0.1:${port}/hello`);
    expect(await res.json()).toEqual({ limit: '5', all: ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset'] });
    expect([res.headers.get('ratelimit-limit'), res.headers.get('ratelimit-remaining')]).toEqual(['5', 'mine']);
    expect(calls).toEqual(['RateLimit-Remaining']); // the handler's own call only
  } finally {
    await app.close();
  }
});
