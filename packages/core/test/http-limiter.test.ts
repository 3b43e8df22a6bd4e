// The framework-free HTTP pipeline: option merging, scopes, identities and plans, and how decisions map to responses.
import { createHttpLimiter, type HttpResult } from '../src/http/http-limiter';
import { resolveHttpOptions } from '../src/http/resolve-http-options';
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
    expect(o.limiter.limits.map((l) => [l.algorithm, l.limit, l.windowMs])).toEqual([['sliding-window-counter', 60, 60_000]]);
  });

  it('merges route overrides key by key; `limits` on a route drops the global single limit and back', () => {
    const global = { limit: 100, windowMs: 10_000, headers: 'legacy' as const, cost: 2 };
    expect(resolveHttpOptions(global, { limit: 5 }).limiter.limits).toMatchObject([{ name: 'default', limit: 5, windowMs: 10_000 }]);
    const withLimits = resolveHttpOptions(global, { limits: [{ name: 'b', limit: 3 }] });
    expect(withLimits.limiter.limits).toMatchObject([{ name: 'b', limit: 3, windowMs: 10_000 }]);
    expect(withLimits.dialects).toEqual(['legacy']);
    const single = resolveHttpOptions({ limits: [{ limit: 3 }] }, { limit: 7 }).limiter;
    expect(single.limits).toMatchObject([{ name: 'default', limit: 7 }]);
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

describe('one definition per bucket', () => {
  it('refuses two limiters of one group that define its bucket differently, at construction, naming both', () => {
    const store = new MemoryStore();
    const http = createHttpLimiter({ store, logger: silent });
    http.route({ group: 'auth', limit: 3, windowMs: '1m' });
    http.route({ group: 'auth', limit: 3, windowMs: '1m' }); // the same definition: one bucket, fine
    let error: unknown;
    try {
      http.route({ group: 'auth', limit: 3, windowMs: '1h' });
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({ code: 'FG_BUCKET_CONFLICT' });
    const message = (error as Error).message;
    expect(message).toMatch(/`auth` policy `default`.*sliding-window-counter 3 per 60000 ms.*sliding-window-counter 3 per 3600000 ms/);
    // Both definitions are named by where the app made them (this file).
    expect(message.match(/http-limiter\.test\.ts:\d+/g)).toHaveLength(2);
    // Another name, group or prefix is another bucket.
    expect(() => http.route({ group: 'auth', limits: [{ name: 'hourly', limit: 3, windowMs: '1h' }] })).not.toThrow();
    expect(() => http.route({ group: 'auth', limit: 3, windowMs: '1h', prefix: 'other' })).not.toThrow();
  });

  it('refuses, at the first request of a route, a second limiter that counts the same route under another definition', async () => {
    const store = new MemoryStore();
    const perMinute = createHttpLimiter({ store, logger: silent, limit: 100, windowMs: '1m' });
    const perSecond = createHttpLimiter({ store, logger: silent, limit: 10, windowMs: '1s' });
    expect((await perMinute.handle(facts(), {})).status).toBe('next');
    await expect(perSecond.handle(facts(), {})).rejects.toMatchObject({ code: 'FG_BUCKET_CONFLICT' });
    // Named apart, they count apart.
    const named = createHttpLimiter({ store, logger: silent, limits: [{ name: 'per-second', limit: 10, windowMs: '1s' }] });
    expect((await named.handle(facts(), {})).status).toBe('next');
  });
});

describe('exempt requests: allowList and skip', () => {
  const at = (ip: string) => facts({ ip });

  it('never counts or refuses an allowlisted address or range, IPv4-mapped IPv6 included; others are limited', async () => {
    const http = createHttpLimiter({ logger: silent, limit: 1, allowList: ['10.0.0.0/8', '203.0.113.7', '2001:db8:1::/48', '::ffff:198.51.100.0/120'] });
    for (const ip of ['10.1.2.3', '::ffff:10.9.9.9', '203.0.113.7', '2001:db8:1:2::5', '[2001:db8:1::1]:443', '198.51.100.77']) {
      for (let i = 0; i < 3; i++) {
        const r = await http.handle(at(ip), {});
        expect({ ip, status: r.status, decision: r.decision, headers: r.headers }).toEqual({ ip, status: 'next', decision: undefined, headers: [] });
      }
    }
    const outside = [await http.handle(at('203.0.113.8'), {}), await http.handle(at('203.0.113.8'), {})];
    expect(outside.map((r) => r.status)).toEqual(['next', 429]);
    expect((await http.handle(at('2001:db8:2::1'), {})).decision?.remaining).toBe(0);
  });

  it('refuses a bad allow list entry at construction, naming it', () => {
    expect(() => createHttpLimiter({ allowList: ['10.0.0.0/33'] })).toThrow(/`allowList\[0\]`: got "10.0.0.0\/33"/);
    expect(() => createHttpLimiter({ allowList: ['10.0.0.1', 'not-an-ip'] })).toThrow(/`allowList\[1\]`/);
    expect(() => createHttpLimiter({ allowList: '10.0.0.1' as never })).toThrow(/`allowList`: got "10.0.0.1"; expected an array/);
    expect(() => createHttpLimiter({ allowList: ['2001:db8::/129'] })).toThrow(/`allowList\[0\]`/);
  });

  it('exempts what skip says, sync or async, per route; a throwing skip fails the request', async () => {
    const http = createHttpLimiter<{ internal?: boolean }>({ logger: silent, limit: 1, skip: (req) => req.internal === true });
    for (let i = 0; i < 3; i++) expect((await http.handle(facts(), { internal: true })).decision).toBeUndefined();
    expect((await http.handle(facts(), {})).status).toBe('next');
    expect((await http.handle(facts(), {})).status).toBe(429);
    const route = http.route({ skip: async () => true })!;
    expect((await route.handle(facts({ route: '/b' }), {})).decision).toBeUndefined();
    const boom = createHttpLimiter({ logger: silent, skip: () => { throw new Error('boom'); } });
    await expect(boom.handle(facts(), {})).rejects.toThrow('boom');
  });
});

describe('functions that answer with a thenable that is not a native promise', () => {
  /** A PromiseLike that is not a Promise: what a userland or older promise library returns. */
  const thenable = <T>(value: T): PromiseLike<T> => ({
    then: (onFulfilled, onRejected) => Promise.resolve(value).then(onFulfilled, onRejected),
  });

  it('waits for skip, cost and key answered as thenables, as it would for promises', async () => {
    const exempt = createHttpLimiter<{ internal?: boolean }>({ logger: silent, limit: 1, skip: ((req: { internal?: boolean }) => thenable(req.internal === true)) as never });
    for (let i = 0; i < 3; i++) expect((await exempt.handle(facts(), { internal: true })).decision).toBeUndefined();
    expect((await exempt.handle(facts(), {})).status).toBe('next');
    expect((await exempt.handle(facts(), {})).status).toBe(429);

    const costly = createHttpLimiter({ logger: silent, limit: 3, cost: (() => thenable(2)) as never });
    const first = await costly.handle(facts(), {});
    expect([first.status, first.decision?.remaining]).toEqual(['next', 1]);
    expect((await costly.handle(facts(), {})).status).toBe(429);

    const keyed = createHttpLimiter({ logger: silent, limit: 1, key: (() => thenable('tenant-7')) as never });
    expect((await keyed.handle(facts({ ip: '198.51.100.1' }), {})).status).toBe('next');
    // Another address, the same key: the key's bucket, already spent.
    expect((await keyed.handle(facts({ ip: '198.51.100.2' }), {})).status).toBe(429);
  });
});

describe('count by outcome, several keys, reset on success', () => {
  type Login = { user?: string };
  const login = (user: string | undefined, ip = '203.0.113.9') => facts({ ip, method: 'POST', route: '/login' });
  /** One request through the pipeline, then its response: `status` settles it as the adapter would. */
  async function attempt(http: ReturnType<typeof createHttpLimiter<Login>>, user: string | undefined, status: number | undefined, ip?: string) {
    const result = await http.handle(login(user, ip), { user });
    if (result.status === 'next') result.finish?.(status);
    await new Promise((r) => setImmediate(r)); // the refund is a store call of its own
    return result.status;
  }

  it("countOnly 'failed': successes are given back, failures count, and parallel guesses cannot all pass", async () => {
    const http = createHttpLimiter<Login>({ logger: silent, limit: 3, countOnly: 'failed' });
    for (let i = 0; i < 10; i++) expect(await attempt(http, 'u', 200)).toBe('next');
    // 10 at once, none answered yet: only 3 get through to the handler.
    const parallel = await Promise.all(Array.from({ length: 10 }, () => http.handle(login('u'), { user: 'u' })));
    expect(parallel.filter((r) => r.status === 'next')).toHaveLength(3);
    for (const r of parallel) r.finish?.(401);
    await new Promise((r) => setImmediate(r));
    expect(await attempt(http, 'u', 200)).toBe(429);
  });

  it("countOnly 'succeeded' counts only successes; a response cut off counts as a failure; isFailure decides", async () => {
    const http = createHttpLimiter<Login>({ logger: silent, limit: 2, countOnly: 'succeeded' });
    for (let i = 0; i < 5; i++) expect(await attempt(http, 'u', 500)).toBe('next');
    expect([await attempt(http, 'u', 201), await attempt(http, 'u', undefined), await attempt(http, 'u', 200), await attempt(http, 'u', 200)]).toEqual(['next', 'next', 'next', 429]);
    const custom = createHttpLimiter<Login>({ logger: silent, limit: 1, countOnly: 'failed', isFailure: ({ status }) => status === 403 });
    expect([await attempt(custom, 'u', 401), await attempt(custom, 'u', 403), await attempt(custom, 'u', 200)]).toEqual(['next', 'next', 429]);
  });

  it('counts an extra key (the account) beside the IP, all-or-nothing: a refusal by one gives back the other', async () => {
    const http = createHttpLimiter<Login>({
      logger: silent,
      limit: 4,
      countOnly: 'failed',
      extraKeys: [{ name: 'account', key: (req) => req.user, limit: 2 }],
    });
    // One account from many IPs: refused on the third failure, whichever IP.
    expect([await attempt(http, 'bob', 401, '10.0.0.1'), await attempt(http, 'bob', 401, '10.0.0.2'), await attempt(http, 'bob', 401, '10.0.0.3')]).toEqual(['next', 'next', 429]);
    // The refusal by the account gave the IP its unit back: 10.0.0.3 still has all 4.
    for (let i = 0; i < 4; i++) expect(await attempt(http, `user-${i}`, 401, '10.0.0.3')).toBe('next');
    expect(await attempt(http, 'user-9', 401, '10.0.0.3')).toBe(429);
    // No account name: only the IP counts.
    expect(await attempt(http, undefined, 401, '10.0.0.4')).toBe('next');
  });

  it('answers 400 to an extra key the client made an array, object, null, boolean or very long string, never skipping it; a number is a key (issue 40, row 8)', async () => {
    type Body = { username?: unknown };
    const http = createHttpLimiter<Body>({
      logger: silent,
      limit: 100,
      countOnly: 'failed',
      extraKeys: [{ name: 'account', key: (req) => req.username, limit: 3 }],
    });
    const send = async (username: unknown, ip: string) => {
      const result = await http.handle(login(undefined, ip), { username });
      if (result.status === 'next') result.finish?.(401); // the handler refuses the guess
      await new Promise((r) => setImmediate(r));
      return result;
    };
    // Each would have reached the handler unlimited by the account (the key was skipped).
    const hostile: unknown[] = [['victim'], [['victim']], { $ne: null }, null, true, 'v'.repeat(1_025), NaN];
    for (const [i, value] of hostile.entries()) {
      const result = await send(value, `10.1.0.${i + 1}`);
      expect(result).toMatchObject({ status: 400, decision: undefined, contentType: 'application/problem+json' });
      expect(JSON.parse(result.body as string)).toMatchObject({ status: 400, title: 'Bad Request' });
      expect(result.body as string).not.toContain('victim');
    }
    // A number is the account it spells: 42 and '42' share one bucket of 3.
    expect([(await send(42, '10.2.0.1')).status, (await send('42', '10.2.0.2')).status, (await send(42, '10.2.0.3')).status, (await send('42', '10.2.0.4')).status]).toEqual(['next', 'next', 'next', 429]);
    // Nothing sent still skips the key (no account named); the 1024-character string is still a key.
    expect((await send(undefined, '10.3.0.1')).status).toBe('next');
    expect((await send('', '10.3.0.1')).status).toBe('next');
    expect((await send('v'.repeat(1_024), '10.3.0.1')).status).toBe('next');
    // The 400 counts against the IP like any failed request: one IP sending 100 of them is refused past its limit.
    const small = createHttpLimiter<Body>({ logger: silent, limit: 5, countOnly: 'failed', extraKeys: [{ name: 'account', key: (req) => req.username, limit: 3 }] });
    const statuses: (number | string)[] = [];
    for (let i = 0; i < 10; i++) statuses.push((await small.handle(login(undefined, '10.4.0.1'), { username: ['victim', i] })).status);
    expect(statuses).toEqual([400, 400, 400, 400, 400, 429, 429, 429, 429, 429]);
  });

  it('resetOnSuccess clears the account on a success; a failing key function gives back what was charged', async () => {
    const http = createHttpLimiter<Login>({
      logger: silent,
      limit: 100,
      countOnly: 'failed',
      extraKeys: [{ name: 'account', key: (req) => req.user, limit: 2 }],
      resetOnSuccess: ['account'],
    });
    await attempt(http, 'carol', 401);
    await attempt(http, 'carol', 200);
    expect([await attempt(http, 'carol', 401), await attempt(http, 'carol', 401), await attempt(http, 'carol', 401)]).toEqual(['next', 'next', 429]);
    const failing = createHttpLimiter<Login>({ logger: silent, limit: 1, extraKeys: [{ name: 'a', key: () => { throw new Error('no body'); } }] });
    await expect(failing.handle(login('x'), {})).rejects.toThrow('no body');
    await new Promise((r) => setImmediate(r));
    const plain = failing.route({ extraKeys: [] })!;
    expect((await plain.handle(login('x'), {})).status).toBe('next'); // the IP's unit was given back
  });

  it('logs a resetOnSuccess the store fails, once per run of failures, and the count stays', async () => {
    const memory = new MemoryStore();
    let resets = 'fail' as 'fail' | 'work';
    const store: Store = {
      name: 'flaky-reset',
      evaluate: (request) => memory.evaluate(request),
      reset: (keys) => (resets === 'fail' ? Promise.reject(new Error('reset refused')) : memory.reset(keys)),
    };
    const warnings: { message: string; details?: Record<string, unknown> }[] = [];
    const logger = { warn: (message: string, details?: Record<string, unknown>) => warnings.push({ message, details }), error: () => undefined };
    const http = createHttpLimiter<Login>({
      store,
      logger,
      limit: 100,
      countOnly: 'failed',
      extraKeys: [{ name: 'account', key: (req) => req.user, limit: 3 }],
      resetOnSuccess: ['account'],
    });
    const settled = () => new Promise((r) => setTimeout(r, 10));
    await attempt(http, 'dave', 401);
    await attempt(http, 'dave', 200);
    await attempt(http, 'dave', 200);
    await settled();
    expect(warnings).toHaveLength(1);
    expect(warnings[0].message).toMatch(/resetOnSuccess could not clear extra key `account` in `POST \/login#account`.*reset refused/);
    expect(warnings[0].details).toMatchObject({ store: 'flaky-reset', key: 'account', scope: 'POST /login#account' });
    // The failed resets left the one failure counted: two more failures spend the account's 3.
    expect([await attempt(http, 'dave', 401), await attempt(http, 'dave', 401), await attempt(http, 'dave', 401)]).toEqual(['next', 'next', 429]);
    resets = 'work';
    await attempt(http, 'erin', 200);
    await settled();
    resets = 'fail';
    await attempt(http, 'erin', 200);
    await settled();
    expect(warnings).toHaveLength(2); // a reset worked in between: a new run of failures is logged again
  });

  it('refuses bad outcome and extra-key options at construction, naming them', () => {
    expect(() => createHttpLimiter({ countOnly: 'failures' as never })).toThrow(/`countOnly`: got "failures"; expected one of 'failed', 'succeeded'/);
    expect(() => createHttpLimiter({ isFailure: () => true })).toThrow(/`isFailure`.*only together with `countOnly`/);
    expect(() => createHttpLimiter({ resetOnSuccess: ['account'] })).toThrow(/`resetOnSuccess`.*countOnly: 'failed'/);
    expect(() => createHttpLimiter({ countOnly: 'failed', resetOnSuccess: ['acount'], extraKeys: [{ name: 'account', key: () => 'x' }] })).toThrow(/`resetOnSuccess`: got "acount"; expected one of the extraKeys names \(account\)/);
    expect(() => createHttpLimiter({ extraKeys: [{ name: 'a', key: () => 'x', max: 3 }] as never })).toThrow(/Unknown option `max` in extraKeys\[0\]: did you mean `limit`\?/);
    expect(() => createHttpLimiter({ extraKeys: [{ name: 'a', key: 'x' }] as never })).toThrow(/`extraKeys\[0\].key`/);
    expect(() => createHttpLimiter({ extraKeys: [{ name: 'a', key: () => 'x' }, { name: 'a', key: () => 'y' }] })).toThrow(/`extraKeys\[1\].name`/);
  });
});

describe('strict option names', () => {
  it.each([
    ['max', 3, 'limit'],
    ['windowMS', 60_000, 'windowMs'],
    ['limt', 3, 'limit'],
    ['failmode', 'closed', 'failMode'],
    ['timeWindow', 60_000, 'windowMs'],
    ['keyGenerator', () => 'k', 'key'],
    ['standardHeaders', true, 'headers'],
    ['legacyHeaders', false, 'headers'],
    ['points', 10, 'limit'],
    ['duration', 60, 'windowMs'],
  ])('refuses `%s` (given %p) and names the option meant', (name, value, meant) => {
    expect(() => createHttpLimiter({ [name]: value } as never)).toThrow(
      expect.objectContaining({ code: 'FG_UNKNOWN_OPTION', option: name, message: expect.stringContaining(`did you mean \`${meant}\`?`) }),
    );
  });

  it('refuses unknown names in route overrides and nested options, and says what to do for peers\' options it has no twin for', () => {
    const http = createHttpLimiter({ logger: silent });
    expect(() => http.route({ max: 1 } as never)).toThrow(/Unknown option `max` in rateLimit route options: did you mean `limit`\?/);
    expect(() => createHttpLimiter({ whitelist: ['10.0.0.1'] } as never)).toThrow(/Unknown option `whitelist`.*did you mean `allowList`\?/);
    expect(() => createHttpLimiter({ limits: [{ limit: 1, windowMS: 5 }] } as never)).toThrow(/Unknown option `windowMS` in limits\[0\]: did you mean `windowMs`\?/);
    expect(() => createHttpLimiter({ breaker: { threshold: 3 } } as never)).toThrow(/Unknown option `threshold` in breaker/);
    expect(() => createHttpLimiter({ keyCache: { ttl: 5 } } as never)).toThrow(/Unknown option `ttl` in keyCache: did you mean `ttlMs`\?/);
    expect(() => createHttpLimiter({ hotKeys: { threshhold: 5 } } as never)).toThrow(/Unknown option `threshhold` in hotKeys: did you mean `threshold`\?/);
    // A typo is a typo whatever its value, undefined included.
    expect(() => createHttpLimiter({ failmode: undefined } as never)).toThrow(/`failmode`.*did you mean `failMode`/);
  });

  it('refuses a static cost above the smallest limit, which could never be admitted', () => {
    expect(() => createHttpLimiter({ limit: 10, cost: 20 })).toThrow(/`cost`: got 20; expected at most the smallest limit or burst \(10\)/);
    expect(() => createHttpLimiter({ limit: 10 }).route({ cost: 11 })).toThrow(/`cost`: got 11/);
    expect(() => createHttpLimiter({ limits: [{ name: 'a', limit: 50 }, { name: 'b', algorithm: 'token-bucket', burst: 5, refillPerSecond: 1 }], cost: 6 })).toThrow(/\(5\)/);
    expect(() => createHttpLimiter({ limit: 10, cost: 10 })).not.toThrow();
  });

  it('refuses a static cost above what one lease takes (10,000 slots), however large the in-flight limit', () => {
    const big = { limit: 1_000_000, concurrency: { limit: 50_000 } };
    expect(() => createHttpLimiter({ ...big, cost: 10_001 })).toThrow(
      /`cost`: got 10001; expected at most the smallest limit or burst \(10000\), and a request with an in-flight limit takes at most 10000 slots/,
    );
    expect(() => createHttpLimiter(big).route({ cost: 20_000 })).toThrow(expect.objectContaining({ code: 'FG_INVALID_OPTION', option: 'cost' }));
    expect(() => createHttpLimiter({ ...big, cost: 10_000 })).not.toThrow();
    // Without an in-flight limit, a rate limit's cost is bounded by the limit alone.
    expect(() => createHttpLimiter({ limit: 1_000_000, cost: 20_000 })).not.toThrow();
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
    // A store that answers through a promise, as RedisStore does.
    const memory = new MemoryStore();
    const waiting: Store = { name: 'waiting', evaluate: (request) => memory.evaluate(request), reset: (keys) => memory.reset(keys) };
    const http = createHttpLimiter({ store: waiting, limit: 1, retryAfterJitterMs: 0, logger: silent });
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

  it('stays synchronous with key and cost functions that answer at once, and waits for ones that return a promise', async () => {
    const sync = createHttpLimiter<{ user: string }>({ limit: 5, key: (r) => r.user, cost: () => 2, logger: silent });
    const now = sync.handleNow(facts(), { user: 'ann' });
    expect(now).not.toBeInstanceOf(Promise);
    expect([(now as HttpResult).status, (now as HttpResult).decision?.remaining]).toEqual(['next', 3]);
    const later = createHttpLimiter<{ user: string }>({ limit: 5, key: async (r) => r.user, cost: async () => 2, logger: silent });
    const pending = later.handleNow(facts(), { user: 'ann' });
    expect(pending).toBeInstanceOf(Promise);
    expect((await pending).decision?.remaining).toBe(3);
    // A throwing key function still rejects (never throws at the adapter).
    const throwing = createHttpLimiter({ key: () => { throw new Error('boom'); }, logger: silent });
    await expect(throwing.handleNow(facts(), {})).rejects.toThrow('boom');
  });

  it('decides synchronously on a store that never waits (MemoryStore): admitted and limited answers come without a promise', () => {
    const http = createHttpLimiter({ limit: 2, retryAfterJitterMs: 0, logger: silent });
    const answers = [http.handleNow(facts(), {}), http.handleNow(facts(), {}), http.handleNow(facts(), {}), http.handleNow(facts(), {})];
    for (const answer of answers) expect(answer).not.toBeInstanceOf(Promise);
    expect(answers.map((a) => [(a as HttpResult).status, (a as HttpResult).decision?.reason])).toEqual([
      ['next', 'allowed'],
      ['next', 'allowed'],
      [429, 'limited'],
      [429, 'blocked'],
    ]);
    expect((answers[1] as HttpResult).headers).toEqual([
      ['RateLimit-Limit', '2'],
      ['RateLimit-Remaining', '0'],
      ['RateLimit-Reset', expect.stringMatching(/^[1-9]\d*$/)],
      ['Floodgate-Reset-Ms', expect.stringMatching(/^[1-9]\d*$/)],
    ]);
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

  it("answers 401 for an unknown API key when identity rejects it, counted against the client IP", async () => {
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
    // The 401 drew one unit from the IP's bucket: guessing keys is limited like any request.
    const anonymous = await http.handle(facts(), {});
    expect(anonymous.decision?.remaining).toBe(58);
  });

  it('answers 429, not 401, once unknown keys have spent the IP\'s limit', async () => {
    const http = createHttpLimiter({ logger: silent, limit: 2, resolveKey: () => null, unknownKey: 'reject' });
    const statuses: (string | number)[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await http.handle(facts({ headers: { 'x-api-key': `guess-${i}` } }), {})).status);
    expect(statuses).toEqual([401, 401, 429, 429, 429]);
  });

  it('shares one identity (one key cache, one lookup per key) between routes that override only limiter or HTTP options', async () => {
    const lookups: string[] = [];
    const http = createHttpLimiter({ logger: silent, resolveKey: (key) => (lookups.push(key), { account: key }) });
    const strict = http.route({ limit: 1 })!;
    const cheap = http.route({ cost: 2 })!;
    const own = http.route({ apiKeyHeaders: ['x-api-key'] })!;
    for (const [r, route] of [[http, '/a'], [strict, '/b'], [cheap, '/c']] as const) await r.handle(facts({ route, headers: { 'x-api-key': 'k1' } }), {});
    expect(lookups).toEqual(['k1']);
    await own.handle(facts({ route: '/d', headers: { 'x-api-key': 'k1' } }), {});
    expect(lookups).toEqual(['k1', 'k1']); // an identity option of its own: its own cache
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
