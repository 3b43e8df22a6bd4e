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
