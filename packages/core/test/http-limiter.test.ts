// The framework-free HTTP pipeline: option merging, scopes, identities and plans, and how decisions map to responses.
import { createHttpLimiter, type HttpResult } from '../src/http/http-limiter';
import { resolveHttpOptions } from '../src/http/resolve-http-options';
import { createLimiter } from '../src/limiter';
import type { RequestFacts } from '../src/identity';
import { MemoryStore } from '../src/stores/memory-store';
import type { Store } from '../src/stores/store';

const silent = { warn: () => undefined, error: () => undefined };
const facts = (over: Partial<RequestFacts> = {}): RequestFacts => ({
  ip: '203.0.113.9',
  headers: {},
  method: 'GET',
  route: '/a',
  ...over,
});

describe('resolveHttpOptions', () => {
  it('defaults to draft-6 headers, 1000 ms of jitter, cost 1 and 60 per minute', () => {
    const o = resolveHttpOptions({});
    expect(o.dialects).toEqual(['draft-6']);
    expect(o.retryAfterJitterMs).toBe(1000);
    expect(o.cost).toBe(1);
    expect(o.shadow).toBe(false);
    // The documented default, written out: not the constant from the module under test.
    const limiter = createLimiter({ ...o.limiter, logger: silent });
    expect(limiter.options.limits.map((l) => [l.algorithm, l.limit, l.windowMs])).toEqual([['sliding-window-counter', 60, 60_000]]);
  });

  it('merges route overrides key by key; `limits` on a route drops the global single limit and back', () => {
    const global = { limit: 100, windowMs: 10_000, headers: 'legacy' as const, cost: 2 };
    expect(resolveHttpOptions(global, { limit: 5 }).limiter).toMatchObject({ limit: 5, windowMs: 10_000 });
    const withLimits = resolveHttpOptions(global, { limits: [{ name: 'b', limit: 3 }] });
    expect(withLimits.limiter.limit).toBeUndefined();
    expect(withLimits.limiter.limits).toEqual([{ name: 'b', limit: 3 }]);
    expect(withLimits.dialects).toEqual(['legacy']);
    const single = resolveHttpOptions({ limits: [{ limit: 3 }] }, { limit: 7 }).limiter;
    expect([single.limit, single.limits]).toEqual([7, undefined]);
    expect(resolveHttpOptions(global, { headers: ['draft-10', 'draft-10', 'draft-6'] }).dialects).toEqual(['draft-10', 'draft-6']);
    expect(global).toEqual({ limit: 100, windowMs: 10_000, headers: 'legacy', cost: 2 });
  });

  it('throws for bad values naming the option, per route too', () => {
    expect(() => resolveHttpOptions({ cost: 1.5 })).toThrow(/`cost`: got 1.5/);
    expect(() => resolveHttpOptions({}, { group: '' })).toThrow(/`group`/);
    expect(() => resolveHttpOptions({ shadow: 'yes' as never })).toThrow(/`shadow`/);
    expect(() => resolveHttpOptions({ onLimited: 3 as never })).toThrow(/`onLimited`/);
    expect(() => resolveHttpOptions({ headers: 7 as never })).toThrow(/`headers`/);
    expect(() => resolveHttpOptions({}, null as never)).toThrow(/`route options`/);
  });
});

describe('createHttpLimiter', () => {
  it('scopes by group, by method + pattern (HEAD as GET), and one bucket for unmatched requests', () => {
    const http = createHttpLimiter({ logger: silent });
    expect(http.scopeOf({ method: 'head', route: '/users/:id' })).toBe('GET /users/:id');
    expect(http.scopeOf({ method: 'POST', route: undefined })).toBe('<unmatched>');
    expect(http.route({ group: 'search' })!.scopeOf({ method: 'GET', route: '/x' })).toBe('search');
    expect(http.route(false)).toBeNull();
  });

  it('shares the store between routes, and reuses the global limiter when only HTTP options change', () => {
    const http = createHttpLimiter({ logger: silent });
    const cheap = http.route({ cost: 2, headers: false })!;
    const strict = http.route({ limit: 1 })!;
    expect(cheap.limiter).toBe(http.limiter);
    expect(strict.limiter).not.toBe(http.limiter);
    expect(strict.limiter.options.store).toBe(http.limiter.options.store);
  });

  it('answers a blocked caller synchronously (handleNow returns no promise), and waits only when the store is asked', async () => {
    const http = createHttpLimiter({ limit: 1, retryAfterJitterMs: 0, logger: silent });
    const first = http.handleNow(facts(), {});
    expect(first).toBeInstanceOf(Promise); // the store decides: a promise
    expect((await first).status).toBe('next');
    const second = await http.handleNow(facts(), {});
    expect(second.status).toBe(429); // denied by the store, which sets the block
    const third = http.handleNow(facts(), {});
    expect(third).not.toBeInstanceOf(Promise);
    expect((third as HttpResult).status).toBe(429);
    expect((third as HttpResult).decision?.reason).toBe('blocked');
  });

  it('answers 503 with Retry-After and problem+json when the store fails with failMode closed', async () => {
    const broken: Store = { name: 'broken', evaluate: () => Promise.reject(new Error('down')), reset: async () => undefined };
    const http = createHttpLimiter({ store: broken, failMode: 'closed', retryAfterJitterMs: 0, timeoutMs: 50, logger: silent });
    const result = await http.handle(facts(), {});
    expect(result.status).toBe(503);
    expect(result.decision?.reason).toBe('fail-closed');
    expect(result.headers).toEqual([['Retry-After', expect.stringMatching(/^[1-9]\d*$/)]]);
    expect(result.contentType).toBe('application/problem+json');
    expect(JSON.parse(result.body as string)).toMatchObject({ status: 503 });
  });

  it("limits from memory with failMode 'local' and sends no quota headers for it", async () => {
    const broken: Store = { name: 'broken', evaluate: () => Promise.reject(new Error('down')), reset: async () => undefined };
    const http = createHttpLimiter({ store: broken, failMode: 'local', limit: 1, retryAfterJitterMs: 0, timeoutMs: 50, logger: silent });
    const first = await http.handle(facts(), {});
    expect([first.status, first.decision?.reason, first.headers]).toEqual(['next', 'fail-local', []]);
    const second = await http.handle(facts(), {});
    expect(second.status).toBe(429);
    expect(second.headers.map(([n]) => n)).toEqual(['Retry-After']);
  });

  it('answers 401 for an unknown API key when identity rejects it, without drawing quota', async () => {
    const store = new MemoryStore();
    const http = createHttpLimiter({
      store,
      logger: silent,
      resolveKey: (key) => (key === 'good' ? { account: 'acct-1' } : null),
      unknownKey: 'reject',
    });
    const bad = await http.handle(facts({ headers: { 'x-api-key': 'bad' } }), {});
    expect([bad.status, bad.decision, bad.headers]).toEqual([401, undefined, []]);
    const good = await http.handle(facts({ headers: { 'x-api-key': 'good' } }), {});
    expect(good.status).toBe('next');
    expect([good.decision?.limit, good.decision?.remaining]).toEqual([60, 59]);
  });

  it("enforces an API key's plan from resolveKey instead of the route's limits, one limiter per plan", async () => {
    const http = createHttpLimiter({
      logger: silent,
      limit: 100,
      resolveKey: (key) => ({ account: key, limits: key.startsWith('free') ? [{ name: 'free', limit: 2 }] : undefined }),
    });
    const free = await http.handle(facts({ headers: { 'x-api-key': 'free-1' } }), {});
    expect([free.decision?.policy, free.decision?.limit, free.decision?.remaining]).toEqual(['free', 2, 1]);
    const paid = await http.handle(facts({ headers: { 'x-api-key': 'paid-1' } }), {});
    expect([paid.decision?.policy, paid.decision?.limit]).toEqual(['default', 100]);
  });

  it('falls back to the default identity when the key function returns nothing, and rejects a bad cost', async () => {
    const http = createHttpLimiter<{ user?: string }>({ logger: silent, key: (req) => req.user });
    const anon = await http.handle(facts(), {});
    const user = await http.handle(facts(), { user: 'u1' });
    const anonAgain = await http.handle(facts(), {});
    expect([anon.decision?.remaining, user.decision?.remaining, anonAgain.decision?.remaining]).toEqual([59, 59, 58]);
    const bad = createHttpLimiter({ logger: silent, cost: () => Number.NaN });
    await expect(bad.handle(facts(), {})).rejects.toMatchObject({ code: 'FG_INVALID_COST' });
  });
});
