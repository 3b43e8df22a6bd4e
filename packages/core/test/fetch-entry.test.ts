// rateLimitFetch, core's fetch-style entry: Request in, a 429 Response or a pass-through with headers out (on Node's own Request/Response).
import { MemoryStore, rateLimitFetch } from '../src';

describe('rateLimitFetch', () => {
  it('names a bad ip or route option at construction', () => {
    expect(() => rateLimitFetch({ ip: 'cf-connecting-ip' as never })).toThrow(/Invalid option `ip`/);
    expect(() => rateLimitFetch({ route: '/users/:id' as never })).toThrow(/Invalid option `route`/);
  });

  it('limits per IP and per route pattern; a 429 is problem+json with Retry-After; admitted responses carry the headers, an immutable one on a copy', async () => {
    const limiter = rateLimitFetch({
      store: new MemoryStore(),
      limit: 1,
      windowMs: '1m',
      ip: (req) => req.headers.get('x-test-ip') ?? undefined,
      route: (req) => (new URL(req.url).pathname.startsWith('/users/') ? '/users/:id' : undefined),
    });
    // Response.redirect's headers are immutable.
    const handler = limiter.wrap(() => Response.redirect('https://example.com/', 302));
    const from = (ip: string, path: string) => new Request(`https://api.test${path}`, { headers: { 'x-test-ip': ip } });
    const first = await handler(from('192.0.2.1', '/users/1'));
    expect([first.status, first.headers.get('ratelimit-remaining')]).toEqual([302, '0']);
    // Another id, same pattern: the same bucket.
    const second = await handler(from('192.0.2.1', '/users/2'));
    expect(second.status).toBe(429);
    expect(second.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(Number(second.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // Another IP: its own budget.
    expect((await handler(from('192.0.2.2', '/users/1'))).status).toBe(302);
    const outcome = await limiter.limit(from('192.0.2.3', '/other'));
    expect([outcome.response, outcome.decision?.allowed, outcome.headers.get('ratelimit-limit')]).toEqual([undefined, true, '1']);
  });
});
