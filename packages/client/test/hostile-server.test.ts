// Issue 40, rows 1 and 7: a server that sends an endless body or an absurd Retry-After, and a pacer fed many origins.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, request } from 'undici';
import { Pacer, RateLimitWaitError, pacedFetch, type FetchLike } from '../src';
import { MAX_TIMER_MS } from '../src/options';
import { floodgatePacing } from '../src/undici';

interface Endless {
  readonly url: string;
  /** Requests received, in order. */
  readonly requests: number;
  /** Whether the endless answer's response was closed (its connection destroyed by the client). */
  readonly endlessClosed: Promise<void>;
  close(): Promise<void>;
}

/**
 * Answers the first request with `first` (status and headers) and a body that never ends: 16 KB chunks
 * as fast as the client takes them (`trickle` false), or one byte every 20 ms. Later requests get 200 "ok".
 */
async function endlessServer(first: { status: number; headers: Record<string, string>; prefix?: string; trickle?: boolean }): Promise<Endless> {
  let n = 0;
  let closed!: () => void;
  const endlessClosed = new Promise<void>((resolve) => (closed = resolve));
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    if (n++ > 0) {
      res.end('ok');
      return;
    }
    res.writeHead(first.status, first.headers);
    if (first.prefix) res.write(first.prefix);
    let timer: ReturnType<typeof setInterval> | undefined;
    res.on('close', () => {
      clearInterval(timer);
      closed();
    });
    if (first.trickle) {
      timer = setInterval(() => res.write(' '), 20);
      return;
    }
    const chunk = Buffer.alloc(16 * 1024, 0x20);
    const pump = () => {
      while (!res.destroyed && res.write(chunk));
    };
    res.on('drain', pump);
    pump();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get requests() {
      return n;
    },
    endlessClosed,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A fetch whose response bodies count the bytes the client pulls and whether the body was cancelled. */
function countingFetch(): { fetch: FetchLike; pulled: () => number; cancelled: Promise<void> } {
  let pulled = 0;
  let cancel!: () => void;
  const cancelled = new Promise<void>((resolve) => (cancel = resolve));
  const fetch: FetchLike = async (input, init) => {
    const res = await globalThis.fetch(input, init);
    const reader = res.body!.getReader();
    const body = new ReadableStream<Uint8Array>(
      {
        async pull(controller) {
          const next = await reader.read();
          if (next.done) controller.close();
          else {
            pulled += next.value.byteLength;
            controller.enqueue(next.value);
          }
        },
        cancel(reason) {
          cancel();
          return reader.cancel(reason);
        },
      },
      { highWaterMark: 0 },
    );
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
  return { fetch, pulled: () => pulled, cancelled };
}

let servers: Endless[] = [];
const agents: Agent[] = [];
async function serve(...args: Parameters<typeof endlessServer>): Promise<Endless> {
  const s = await endlessServer(...args);
  servers.push(s);
  return s;
}
afterEach(async () => {
  await Promise.all(agents.splice(0).map((a) => a.destroy()));
  await Promise.all(servers.map((s) => s.close()));
  servers = [];
});

const PROBLEM = { 'content-type': 'application/problem+json' };
/** One undici chunk: what may be pulled past the bound before it is seen. */
const CHUNK = 64 * 1024;

describe('row 1: an endless problem+json body (pacedFetch)', () => {
  it('stops reading at problemBodyMaxBytes, cancels the body and retries after the Retry-After field', async () => {
    const server = await serve({ status: 429, headers: { ...PROBLEM, 'retry-after': '0' }, prefix: '{"type":"about:blank",' });
    const counting = countingFetch();
    const fetch = pacedFetch(counting.fetch, { jitterMs: 0, problemBodyMaxBytes: 4096, problemBodyTimeoutMs: 60_000 });
    const res = await fetch(server.url);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('ok');
    await counting.cancelled;
    await server.endlessClosed;
    expect(counting.pulled()).toBeLessThanOrEqual(4096 + CHUNK);
    expect(server.requests).toBe(2);
  });

  it('stops reading at problemBodyTimeoutMs and returns the 429 without its problem details', async () => {
    // The body starts with a retry time it never finishes saying: the answer is taken without it.
    const server = await serve({ status: 429, headers: PROBLEM, prefix: '{"retryAfter":0,"detail":"', trickle: true });
    const counting = countingFetch();
    const fetch = pacedFetch(counting.fetch, { jitterMs: 0, problemBodyTimeoutMs: 200 });
    const res = await fetch(server.url);
    expect(res.status).toBe(429);
    expect(server.requests).toBe(1);
    expect(counting.pulled()).toBeLessThan(65_536);
    // The response is the caller's: its body still reads, and cancelling it ends the server's answer.
    const reader = res.body!.getReader();
    expect((await reader.read()).done).toBe(false);
    await reader.cancel();
    await counting.cancelled;
    await server.endlessClosed;
  });
});

describe('row 1: an endless problem+json body (undici interceptor)', () => {
  function dispatcher(options: Parameters<typeof floodgatePacing>[0]) {
    const agent = new Agent();
    agents.push(agent);
    return agent.compose(floodgatePacing(options));
  }

  it('retries after the Retry-After field without waiting for the endless body, and closes it', async () => {
    const server = await serve({ status: 429, headers: { ...PROBLEM, 'retry-after': '0' } });
    const res = await request(server.url, { dispatcher: dispatcher({ jitterMs: 0, problemBodyMaxBytes: 4096, problemBodyTimeoutMs: 60_000 }) });
    expect(res.statusCode).toBe(200);
    expect(await res.body.text()).toBe('ok');
    await server.endlessClosed;
    expect(server.requests).toBe(2);
  });

  it('stops buffering at problemBodyTimeoutMs and passes the 429 on as it comes', async () => {
    const server = await serve({ status: 429, headers: PROBLEM, prefix: '{"retryAfter":0,"detail":"', trickle: true });
    const res = await request(server.url, { dispatcher: dispatcher({ jitterMs: 0, problemBodyTimeoutMs: 200 }) });
    expect(res.statusCode).toBe(429);
    expect(server.requests).toBe(1);
    res.body.on('error', () => undefined).destroy();
    await server.endlessClosed;
  });
});

/** A pacer on a clock the test moves, and a helper that sends one request of `scope` and settles it. */
function clocked(options: ConstructorParameters<typeof Pacer>[0] = {}) {
  let t = 1_000;
  const pacer = new Pacer({ jitterMs: 0, ...options, now: () => t });
  const budget = () => pacer.budget(undefined);
  return {
    pacer,
    advance: (ms: number) => (t += ms),
    async send(scope: string, status: number, headers: Record<string, string> = {}) {
      const ticket = await pacer.acquire(scope, budget());
      pacer.settle(ticket, { status, method: 'GET', headers, attempt: 0, retryAllowed: false });
    },
  };
}

describe('row 7: Retry-After, resets and learned spacing are believed up to maxHoldMs', () => {
  const A = 'https://a.example';

  it.each([['100000000000000000000'], ['86400']])('clamps Retry-After: %s to maxHoldMs; then one request goes, and its normal answer leaves no block', async (value) => {
    const c = clocked({ maxHoldMs: 1_000 });
    await c.send(A, 429, { 'retry-after': value });
    expect(c.pacer.snapshot(A).blockedForMs).toBe(1_000);
    // The wait a call is told is the clamped one.
    const error = await c.pacer.acquire(A, c.pacer.budget(500)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitWaitError);
    expect((error as RateLimitWaitError).waitMs).toBe(1_000);
    c.advance(1_000);
    await c.send(A, 200);
    expect(c.pacer.snapshot(A).blockedForMs).toBe(0);
  });

  it('clamps a quota reset to maxHoldMs', async () => {
    const c = clocked({ maxHoldMs: 1_000 });
    await c.send(A, 200, { 'ratelimit-limit': '5', 'ratelimit-remaining': '0', 'ratelimit-reset': '999999999' });
    expect(c.pacer.snapshot(A).quotas[0].resetInMs).toBe(1_000);
  });

  it.each([
    ['w', '"p";a=0;w=100000000000000'],
    ['t beside a smaller w', '"p";r=0;a=0;t=999999999;w=1'],
  ])('clamps an effective window (%s) to maxHoldMs, and a huge available quota holds nothing back', async (_what, field) => {
    const c = clocked({ maxHoldMs: 1_000 });
    await c.send(A, 200, { ratelimit: field });
    expect(c.pacer.snapshot(A).quotas[0].resetInMs).toBe(1_000);
    c.advance(1_000);
    await c.send(A, 200, { ratelimit: '"p";a=999999999999999;w=1' });
    expect(c.pacer.snapshot(A).quotas[0]).toMatchObject({ remaining: 999_999_999_999_999, resetInMs: 1_000 });
    // Nothing holds the next request: it is admitted at once, without waiting.
    const ticket = await c.pacer.acquire(A, c.pacer.budget(0));
    c.pacer.release(ticket);
  });

  it('caps the spacing learned from Retry-After at maxHoldMs, and halves it every learnedHalfLifeMs once answers are normal', async () => {
    const c = clocked({ maxHoldMs: 1_000, learnedHalfLifeMs: 100 });
    await c.send(A, 200);
    await c.send(A, 200);
    await c.send(A, 429, { 'retry-after': '100000000000000000000' });
    expect(c.pacer.snapshot(A).learnedSpacingMs).toBe(1_000);
    c.advance(1_000);
    await c.send(A, 200); // the server answers normally again: the lesson starts to wear off
    c.advance(100);
    expect(c.pacer.snapshot(A).learnedSpacingMs).toBeCloseTo(500, 5);
    c.advance(3_000);
    expect(c.pacer.snapshot(A).learnedSpacingMs).toBe(0);
  });

  it('never arms a timer past 2^31 - 1 ms, whatever the wait (maxWaitMs: Infinity)', async () => {
    const pacer = new Pacer({ maxWaitMs: Infinity, maxHoldMs: MAX_TIMER_MS, jitterMs: 60_000, random: () => 0.999 });
    const ticket = await pacer.acquire(A, pacer.budget(undefined));
    pacer.settle(ticket, { status: 429, method: 'GET', headers: { 'retry-after': String(MAX_TIMER_MS) }, attempt: 0, retryAllowed: false });
    const delays: number[] = [];
    const real = global.setTimeout;
    const spy = jest.spyOn(global, 'setTimeout').mockImplementation(((fn: () => void, ms?: number) => {
      delays.push(ms ?? 0);
      return real(fn, ms);
    }) as typeof setTimeout);
    const controller = new AbortController();
    const waiting = pacer.acquire(A, pacer.budget(undefined, controller.signal));
    const settled = waiting.then(
      () => 'admitted',
      () => 'aborted',
    );
    await Promise.resolve();
    controller.abort();
    spy.mockRestore();
    expect(await settled).toBe('aborted');
    expect(delays.length).toBeGreaterThan(0);
    expect(Math.max(...delays)).toBeLessThanOrEqual(MAX_TIMER_MS);
  });
});

describe('row 7: at most maxScopes scopes', () => {
  it('keeps the map at its ceiling after many distinct origins', async () => {
    const c = clocked({ maxScopes: 100 });
    for (let i = 0; i < 1_000; i++) await c.send(`https://o${i}.example`, 200);
    expect(c.pacer.scopeCount).toBe(100);
  });

  it('never lets go of a scope with a request in flight: its answer still settles it', async () => {
    const c = clocked({ maxScopes: 10 });
    const ticket = await c.pacer.acquire('https://busy.example', c.pacer.budget(undefined));
    for (let i = 0; i < 100; i++) await c.send(`https://o${i}.example`, 200);
    expect(c.pacer.snapshot('https://busy.example').inFlight).toBe(1);
    c.pacer.settle(ticket, { status: 429, method: 'GET', headers: { 'retry-after': '60' }, attempt: 0, retryAllowed: false });
    expect(c.pacer.snapshot('https://busy.example')).toMatchObject({ inFlight: 0, blockedForMs: 60_000 });
  });

  it('a blocked scope let go costs one request, which learns the block again (no hot loop)', async () => {
    const c = clocked({ maxScopes: 2 });
    await c.send('https://a.example', 429, { 'retry-after': '60' });
    await c.send('https://b.example', 200);
    await c.send('https://c.example', 200); // a.example, used longest ago, is let go
    expect(c.pacer.snapshot('https://a.example').blockedForMs).toBe(0);
    await c.send('https://a.example', 429, { 'retry-after': '60' });
    const error = await c.pacer.acquire('https://a.example', c.pacer.budget(1_000)).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'FG_CLIENT_WAIT_EXCEEDS_LIMIT', reason: 'retry-after' });
  });
});
