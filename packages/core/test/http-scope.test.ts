// Bucket scopes by method: an all-method route is one bucket whatever the method, and no method token or scope grows a map past its bound.
import { bucketClaimsHeld, claimBuckets, CLAIMS_MAX } from '../src/http/bucket-claims';
import { createHttpLimiter } from '../src/http/http-limiter';
import { claimsOnce } from '../src/http/scope';
import type { RequestFacts } from '../src/identity';
import { resolveLimits } from '../src/engine/options';
import { MemoryStore } from '../src/stores/memory-store';

const silent = { warn: () => undefined, error: () => undefined };
const facts = (over: Partial<RequestFacts> = {}): RequestFacts => ({ ip: '203.0.113.9', headers: {}, method: 'GET', route: '/r', ...over });
/** Exactly n per test: no window edge can fall inside it. */
const exactly = (n: number) => ({ algorithm: 'gcra' as const, burst: n, refillPerSecond: n / 3_600 });

describe('scopes by method', () => {
  it('names an all-method route ALL /pattern whatever the method, token or case', () => {
    const http = createHttpLimiter({ logger: silent });
    for (const method of ['GET', 'HEAD', 'POST', 'OPTIONS', 'patch', 'FOO', 'XYZ123', 'M-SEARCH']) {
      expect(http.scopeOf({ method, route: '/r', allMethods: true })).toBe('ALL /r');
    }
    // A route of one method keeps its bucket per method (HEAD on GET's), as documented.
    expect(http.scopeOf({ method: 'HEAD', route: '/r' })).toBe('GET /r');
    expect(http.scopeOf({ method: 'patch', route: '/r' })).toBe('PATCH /r');
    expect(http.scopeOf({ method: 'POST', route: '/r', allMethods: false })).toBe('POST /r');
    // A usage route names an all-method route as 'ALL /pattern'.
    expect(http.scopeOf({ method: 'ALL', route: '/r' })).toBe('ALL /r');
    expect(http.scopeOf({ method: 'FOO', route: undefined, allMethods: true })).toBe('<unmatched>');
    expect(http.route({ group: 'g' })!.scopeOf({ method: 'FOO', route: '/r', allMethods: true })).toBe('g');
  });

  it('gives every token that names no registered method one scope per route, even from an adapter that does not say the route takes every method', () => {
    const http = createHttpLimiter({ logger: silent });
    expect(http.scopeOf({ method: 'FOO', route: '/r' })).toBe('<other> /r');
    expect(http.scopeOf({ method: 'XYZ123', route: '/r' })).toBe('<other> /r');
    expect(http.scopeOf({ method: 'PURGE', route: '/r' })).toBe('PURGE /r');
  });

  it('at limit 2, 1,000 requests with invented tokens on one route admit 2 and hold one bucket claim', async () => {
    const store = new MemoryStore();
    const http = createHttpLimiter({ store, logger: silent, ...exactly(2) });
    const statuses: string[] = [];
    for (let i = 0; i < 1_000; i++) statuses.push(String((await http.handle(facts({ method: `T${i}` }), {})).status));
    expect(statuses.filter((s) => s === 'next')).toHaveLength(2);
    expect(bucketClaimsHeld(store)).toBe(1);
  });
});

describe('bounds on claims', () => {
  const limits = resolveLimits([{ limit: 5 }]);

  it(`a store holds at most CLAIMS_MAX (${CLAIMS_MAX}) bucket definitions, whatever scopes arrive`, () => {
    const store = new MemoryStore();
    for (let i = 0; i < CLAIMS_MAX + 500; i++) claimBuckets(store, 'fg', `GET /r${i}`, limits, 'test');
    expect(bucketClaimsHeld(store)).toBe(CLAIMS_MAX);
    // Definitions it holds are still compared: a clash on one of them fails as before.
    expect(() => claimBuckets(store, 'fg', 'GET /r0', resolveLimits([{ limit: 6 }]), 'other')).toThrow(/Bucket conflict/);
  });

  it('a limiter remembers at most 10,000 claimed scopes (a scope past it is still checked, on each of its requests)', () => {
    const store = new MemoryStore();
    let remembered = 0;
    const claim = claimsOnce(store, 'fg', limits, 'test', () => void remembered++);
    for (let i = 0; i < 10_500; i++) claim(`GET /r${i}`);
    expect(remembered).toBe(10_000);
    expect(() => claimsOnce(store, 'fg', resolveLimits([{ limit: 6 }]), 'other')('GET /r10400')).toThrow(/Bucket conflict/);
  });
});
