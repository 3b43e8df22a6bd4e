// pacedFetch against loopback servers: pacing before the limit, Retry-After, bounded and abortable waits, concurrency.
import { FloodgateClientError, Pacer, RateLimitWaitError, pacedFetch } from '../src';
import { draft6, fixedWindow, startScripted, type ScriptedServer } from './scripted-server';

let servers: ScriptedServer[] = [];
async function serve(...args: Parameters<typeof startScripted>): Promise<ScriptedServer> {
  const s = await startScripted(...args);
  servers.push(s);
  return s;
}
afterEach(async () => {
  await Promise.all(servers.map((s) => s.close()));
  servers = [];
});

describe('pacing before the limit', () => {
  it('waits for the reset when the quota reaches zero instead of taking a 429, never earlier than the reset', async () => {
    const limit = fixedWindow(3, 1000, draft6(3));
    const server = await serve(limit.script);
    const fetch = pacedFetch(globalThis.fetch, { jitterMs: 50 });
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await fetch(`${server.url}/x`)).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 200]);
    expect(server.seen.filter((s) => s.status === 429)).toHaveLength(0);
    // 7 requests at 3 per window: three windows, each opened by a request the client held back.
    expect(limit.windows).toHaveLength(3);
    // The reset is sent rounded up to whole seconds: each window opens no earlier than 1 s after the last.
    for (let i = 1; i < limit.windows.length; i++) expect(limit.windows[i] - limit.windows[i - 1]).toBeGreaterThanOrEqual(1000);
  });

  it("paces on draft-11's proposed names (a: available quota, w: effective window) from a real server, never taking a 429", async () => {
    const limit = fixedWindow(3, 1000, (remaining, resetMs) => ({
      'ratelimit-policy': '"default";q=3;w=1',
      ratelimit: `"default";a=${remaining};w=${Math.ceil(resetMs / 1000)}`,
    }));
    const server = await serve(limit.script);
    const waits: number[] = [];
    const fetch = pacedFetch(globalThis.fetch, { jitterMs: 0, onWait: (e) => waits.push(e.waitMs) });
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await fetch(server.url)).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 200]);
    expect(server.seen.filter((s) => s.status === 429)).toHaveLength(0);
    // Two holds, one per exhausted window, each for the effective window the server named (w=1: up to 1 s).
    expect(waits).toHaveLength(2);
    for (const w of waits) expect(w).toBeGreaterThan(0);
    for (const w of waits) expect(w).toBeLessThanOrEqual(1000);
    expect(fetch.pacer.snapshot(new URL(server.url).origin).quotas[0]).toMatchObject({ policy: 'default', limit: 3 });
  });

  it('counts requests in flight against the quota: concurrent calls do not overrun what is left', async () => {
    const limit = fixedWindow(4, 1000, draft6(4));
    const server = await serve((req, n) => ({ ...limit.script(req, n), delayMs: 30 }));
    const fetch = pacedFetch(globalThis.fetch, { jitterMs: 0 });
    expect((await fetch(server.url)).status).toBe(200); // learns: 3 left
    const statuses = await Promise.all(Array.from({ length: 7 }, () => fetch(server.url).then((r) => r.status)));
    expect(statuses.every((s) => s === 200)).toBe(true);
    expect(server.seen.filter((s) => s.status === 429)).toHaveLength(0);
  });

  it('keeps each named policy and partition apart and waits for the one that ran out', async () => {
    let n = 0;
    const server = await serve(() => {
      n++;
      return {
        headers: {
          'ratelimit-policy': '"burst";q=2;w=1;pk=:YQ==:, "daily";q=100;w=86400;pk=:YQ==:',
          ratelimit: `"burst";r=${n === 1 ? 0 : 1};t=1;pk=:YQ==:, "daily";r=${100 - n};t=80000;pk=:YQ==:`,
        },
      };
    });
    const waits: string[] = [];
    const fetch = pacedFetch(globalThis.fetch, { jitterMs: 0, onWait: (e) => waits.push(`${e.reason}:${e.policy}`) });
    await fetch(server.url);
    const snapshot = fetch.pacer.snapshot(new URL(server.url).origin);
    expect(snapshot.quotas.map((q) => [q.policy, q.partition, q.limit, q.remaining])).toEqual([
      ['burst', 'YQ==', 2, 0],
      ['daily', 'YQ==', 100, 99],
    ]);
    await fetch(server.url);
    expect(waits).toEqual(['quota:burst']);
    expect(server.seen[1].at - server.seen[0].at).toBeGreaterThanOrEqual(1000 - 5);
  });

  it('caps requests in flight at a concurrency quota (qu="concurrent-requests")', async () => {
    const server = await serve(() => ({ delayMs: 40, headers: { 'ratelimit-policy': '"conc";q=2;qu="concurrent-requests"', ratelimit: '"conc";r=1' } }));
    const reasons = new Set<string>();
    const pacer = new Pacer({ onWait: (e) => reasons.add(e.reason) });
    const fetch = pacedFetch(globalThis.fetch, pacer);
    await fetch(server.url); // learns the cap of 2
    await Promise.all(Array.from({ length: 8 }, () => fetch(server.url).then((r) => r.text())));
    expect(server.maxInFlight).toBeLessThanOrEqual(2);
    expect(server.seen).toHaveLength(9);
    expect([...reasons]).toEqual(['concurrency']);
    expect(pacer.snapshot(new URL(server.url).origin).inFlight).toBe(0);
  });
  it('after a reset sends one request and waits for its answer: a reset need not restore the whole quota', async () => {
    const server = await serve((_req, n) => ({
      delayMs: 50,
      headers: { 'ratelimit-limit': '10', 'ratelimit-remaining': n === 0 ? '0' : '9', 'ratelimit-reset': '1' },
    }));
    const fetch = pacedFetch(globalThis.fetch, { jitterMs: 0 });
    await fetch(server.url);
    await Promise.all(Array.from({ length: 4 }, () => fetch(server.url).then((r) => r.text())));
    expect(server.seen).toHaveLength(5);
    // The first after the reset goes alone; the other three go once its answer (9 left) is in.
    expect(server.seen[2].at - server.seen[1].at).toBeGreaterThanOrEqual(45);
    expect(server.seen[4].at - server.seen[2].at).toBeLessThan(45);
  });

  it('drops a policy that a probe\'s answer no longer names, so the scope does not stay one request at a time', async () => {
    const server = await serve((_req, n) => ({ delayMs: 40, headers: n === 0 ? { 'ratelimit-limit': '5', 'ratelimit-remaining': '0', 'ratelimit-reset': '1' } : ({} as Record<string, string>) }));
    const fetch = pacedFetch(globalThis.fetch, { jitterMs: 0 });
    await fetch(server.url);
    await fetch(server.url); // the probe, after the reset: its answer has no quota fields
    expect(fetch.pacer.snapshot(new URL(server.url).origin).quotas).toEqual([]);
    await Promise.all(Array.from({ length: 4 }, () => fetch(server.url).then((r) => r.text())));
    expect(server.maxInFlight).toBeGreaterThan(1);
  });

  it('keeps at most 64 policies and partitions per scope, dropping the one heard of longest ago', async () => {
    const server = await serve((_req, n) => ({ headers: { ratelimit: `"p";r=5;t=60;pk=:${btoa(`user-${n}`)}:` } }));
    const fetch = pacedFetch();
    for (let i = 0; i < 70; i++) await (await fetch(server.url)).text();
    const quotas = fetch.pacer.snapshot(new URL(server.url).origin).quotas;
    expect(quotas).toHaveLength(64);
    expect(quotas[0].partition).toBe(btoa('user-6'));
    expect(quotas[63].partition).toBe(btoa('user-69'));
  });

  it('learns the rate of a server that sends only Retry-After from its first 429, and takes no second one', async () => {
    let start = -Infinity;
    let used = 0;
    const server = await serve(() => {
      const t = performance.now();
      if (t >= start + 1000) {
        start = t;
        used = 0;
      }
      if (used >= 3) return { status: 429, headers: { 'retry-after': String(Math.ceil((start + 1000 - t) / 1000)) } };
      used++;
      return {};
    });
    const fetch = pacedFetch(globalThis.fetch, { jitterMs: 0 });
    for (let i = 0; i < 10; i++) expect((await fetch(server.url)).status).toBe(200);
    expect(server.seen.filter((s) => s.status === 429)).toHaveLength(1);
    expect(fetch.pacer.snapshot(new URL(server.url).origin).learnedSpacingMs).toBeGreaterThanOrEqual(1000 / 2);
  });
});

describe('429 and 503 with Retry-After', () => {
  it('retries an idempotent request after Retry-After (plus jitter, never earlier)', async () => {
    const server = await serve((_req, n) => (n === 0 ? { status: 429, headers: { 'retry-after': '1' } } : { body: 'done' }));
    const fetch = pacedFetch(globalThis.fetch, { jitterMs: 100 });
    const res = await fetch(server.url);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('done');
    expect(server.seen.map((s) => s.status)).toEqual([429, 200]);
    expect(server.seen[1].at - server.seen[0].at).toBeGreaterThanOrEqual(1000);
  });

  it('retries a 503 with an HTTP-date Retry-After', async () => {
    const server = await serve((_req, n) => (n === 0 ? { status: 503, headers: { 'retry-after': new Date(Date.now() + 2000).toUTCString() } } : {}));
    const res = await pacedFetch(globalThis.fetch, { jitterMs: 0 })(server.url);
    expect(res.status).toBe(200);
    expect(server.seen.map((s) => s.status)).toEqual([503, 200]);
  });

  it('reads the retry time from a problem+json body when no Retry-After field came', async () => {
    const server = await serve((_req, n) =>
      n === 0 ? { status: 429, headers: { 'content-type': 'application/problem+json' }, body: '{"type":"about:blank","status":429,"retryAfter":1}' } : {},
    );
    const res = await pacedFetch()(server.url);
    expect(res.status).toBe(200);
    expect(server.seen).toHaveLength(2);
  });

  it('does not retry a POST by default, but holds the next request of the origin until Retry-After', async () => {
    const server = await serve((_req, n) => (n === 0 ? { status: 429, headers: { 'retry-after': '1' } } : {}));
    const fetch = pacedFetch(globalThis.fetch, { jitterMs: 0 });
    expect((await fetch(server.url, { method: 'POST', body: 'x' })).status).toBe(429);
    expect(server.seen).toHaveLength(1);
    expect((await fetch(server.url)).status).toBe(200);
    expect(server.seen[1].at - server.seen[0].at).toBeGreaterThanOrEqual(1000 - 5);
  });

  it('retries a POST when the caller lists it, sending a copy of a Request body', async () => {
    const bodies: string[] = [];
    const server = await serve((req, n) => {
      req.on('data', (c) => bodies.push(String(c)));
      return n === 0 ? { status: 429, headers: { 'retry-after': '0' } } : {};
    });
    const fetch = pacedFetch(globalThis.fetch, { retryMethods: ['POST'] });
    const res = await fetch(new Request(server.url, { method: 'POST', body: 'payload' }));
    expect(res.status).toBe(200);
    await new Promise((r) => setTimeout(r, 20));
    expect(bodies).toEqual(['payload', 'payload']);
  });

  it('does not retry a 429 that says nothing of when (a cost above the limit, say) and returns it', async () => {
    const server = await serve(() => ({ status: 429, headers: { 'ratelimit-remaining': '5', 'ratelimit-reset': '1' } }));
    const res = await pacedFetch()(server.url);
    expect(res.status).toBe(429);
    expect(server.seen).toHaveLength(1);
  });

  it('gives up after maxRetries and resolves with the last refusal', async () => {
    const server = await serve(() => ({ status: 429, headers: { 'retry-after': '0' } }));
    const res = await pacedFetch(globalThis.fetch, { maxRetries: 2, jitterMs: 0 })(server.url);
    expect(res.status).toBe(429);
    expect(server.seen).toHaveLength(3);
  });

  it('lets a call turn retries off (pacing: { retry: false })', async () => {
    const server = await serve(() => ({ status: 429, headers: { 'retry-after': '0' } }));
    expect((await pacedFetch()(server.url, { pacing: { retry: false } })).status).toBe(429);
    expect(server.seen).toHaveLength(1);
  });
});

describe('bounded and abortable waits', () => {
  it('fails at once with RateLimitWaitError when the wait would pass maxWaitMs, sending nothing', async () => {
    const server = await serve(() => ({ headers: { 'ratelimit-limit': '1', 'ratelimit-remaining': '0', 'ratelimit-reset': '30' } }));
    const fetch = pacedFetch(globalThis.fetch, { maxWaitMs: 5000 });
    await fetch(server.url);
    const error = await fetch(server.url).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitWaitError);
    expect(error).toBeInstanceOf(FloodgateClientError);
    const e = error as RateLimitWaitError;
    expect(e.code).toBe('FG_CLIENT_WAIT_EXCEEDS_LIMIT');
    expect(e.reason).toBe('quota');
    expect(e.waitMs).toBeGreaterThan(29_000);
    expect(e.budgetMs).toBeLessThanOrEqual(5000);
    expect(e.message).toMatch(/would wait \d+ ms \(the quota is used up\), more than the \d+ ms it may wait \(maxWaitMs\)/);
    expect(server.seen).toHaveLength(1);
  });

  it('fails a retry whose Retry-After passes the call\'s own limit, naming the status', async () => {
    const server = await serve(() => ({ status: 503, headers: { 'retry-after': '120' } }));
    const error = (await pacedFetch()(server.url, { pacing: { maxWaitMs: 1000 } }).catch((e: unknown) => e)) as RateLimitWaitError;
    expect(error.code).toBe('FG_CLIENT_WAIT_EXCEEDS_LIMIT');
    expect(error.reason).toBe('retry-after');
    expect(error.status).toBe(503);
    expect(server.seen).toHaveLength(1);
  });

  it('ends a wait when the caller aborts, with the signal\'s reason', async () => {
    const server = await serve(() => ({ headers: { 'ratelimit-remaining': '0', 'ratelimit-reset': '30' } }));
    const fetch = pacedFetch();
    await fetch(server.url);
    const controller = new AbortController();
    const pending = fetch(server.url, { signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    expect(server.seen).toHaveLength(1);
    // An already aborted signal fails before any wait.
    await expect(fetch(server.url, { signal: AbortSignal.abort(new Error('gone')) })).rejects.toThrow('gone');
  });
});

describe('options', () => {
  it('rejects unknown options with a suggestion, naming other clients\' names too', () => {
    expect(() => pacedFetch(globalThis.fetch, { maxWaitMS: 1 } as never)).toThrow(/Unknown option `maxWaitMS` in the pacing options: did you mean `maxWaitMs`\?/);
    expect(() => pacedFetch(globalThis.fetch, { retries: 3 } as never)).toThrow(/did you mean `maxRetries`/);
    expect(() => pacedFetch(globalThis.fetch, { statusCodes: [429] } as never)).toThrow(/did you mean `retryStatuses`/);
    try {
      new Pacer({ bogus: 1 } as never);
    } catch (e) {
      expect((e as FloodgateClientError).code).toBe('FG_CLIENT_UNKNOWN_OPTION');
      expect((e as FloodgateClientError).option).toBe('bogus');
    }
    expect.assertions(5);
  });

  it.each([
    [{ maxWaitMs: -1 }, /Invalid option `maxWaitMs`: got -1; expected a number of ms >= 0, or Infinity/],
    [{ maxWaitMs: NaN }, /`maxWaitMs`: got NaN/],
    [{ jitterMs: 1e9 }, /`jitterMs`: got 1000000000; expected a number of ms from 0 to 60000/],
    [{ maxRetries: 1.5 }, /`maxRetries`: got 1.5; expected a whole number from 0 to 100/],
    [{ retryMethods: 'GET' }, /`retryMethods`: got "GET"; expected an array of HTTP method names/],
    [{ retryStatuses: [429, 700] }, /`retryStatuses`: got \[429,700\]/],
    [{ scope: 'origin' }, /`scope`: got "origin"; expected a function/],
    [{ maxHoldMs: Infinity }, /`maxHoldMs`: got Infinity; expected a number of ms from 1 to 2147483647/],
    [{ maxHoldMs: 0 }, /`maxHoldMs`: got 0; expected a number of ms from 1 to 2147483647/],
    [{ learnedHalfLifeMs: -5 }, /`learnedHalfLifeMs`: got -5; expected a number of ms from 1 to 2147483647/],
    [{ maxScopes: 0 }, /`maxScopes`: got 0; expected a whole number from 1 to 10000000/],
    [{ maxScopes: 1.5 }, /`maxScopes`: got 1.5/],
    [{ problemBodyMaxBytes: 1e9 }, /`problemBodyMaxBytes`: got 1000000000; expected a whole number from 0 to 16777216/],
    [{ problemBodyTimeoutMs: '2s' }, /`problemBodyTimeoutMs`: got "2s"; expected a number of ms from 1 to 2147483647/],
  ])('rejects %p at construction', (options, message) => {
    let error: unknown;
    try {
      new Pacer(options as never);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(FloodgateClientError);
    expect((error as FloodgateClientError).code).toBe('FG_CLIENT_INVALID_OPTION');
    expect((error as Error).message).toMatch(message);
  });

  it('checks a call\'s own options when the call is made', async () => {
    const fetch = pacedFetch();
    await expect(fetch('http://127.0.0.1:1/', { pacing: { maxWait: 1 } as never })).rejects.toThrow(/did you mean `maxWaitMs`/);
    await expect(fetch('http://127.0.0.1:1/', { pacing: { retry: 'no' } as never })).rejects.toThrow(/`pacing.retry`: got "no"; expected true or false/);
  });

  it('refuses a fetch that is not a function', () => {
    expect(() => pacedFetch(null as never)).toThrow(/first argument must be a fetch function, got null/);
  });
});
