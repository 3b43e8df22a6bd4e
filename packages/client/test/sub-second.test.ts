// Issue #46's last gap: waits for a reset to the ms (Floodgate's fields) draw jitter in proportion, on a clock the test moves.
import { Pacer, RateLimitWaitError } from '../src';
import { parseRateLimit } from '../src/parse';

const A = 'https://a.example';

/** A pacer on a clock the test moves; `send` admits one request of A and settles it with `headers`. */
function clocked(options: ConstructorParameters<typeof Pacer>[0] = {}) {
  let t = 1_000;
  const pacer = new Pacer({ ...options, now: () => t });
  return {
    pacer,
    advance: (ms: number) => (t += ms),
    async send(status: number, headers: Record<string, string>) {
      const ticket = await pacer.acquire(A, pacer.budget(undefined));
      pacer.settle(ticket, { status, method: 'GET', headers, attempt: 0, retryAllowed: false });
    },
    /** The wait the next request would be told (its budget 0: it fails at once, saying how long). */
    async waitMs(): Promise<number> {
      const error = await pacer.acquire(A, pacer.budget(0)).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RateLimitWaitError);
      return (error as RateLimitWaitError).waitMs;
    },
  };
}

describe('jitter in proportion to a reset wait', () => {
  it("draws at most a tenth of a quota's wait: a sliding window's next unit 184 ms away is waited for 184 to 202 ms, not up to 434", async () => {
    const c = clocked({ jitterMs: 250, random: () => 0.999 });
    await c.send(200, { 'ratelimit-limit': '10', 'ratelimit-remaining': '0', 'ratelimit-reset': '1', 'floodgate-reset-ms': '184' });
    expect(await c.waitMs()).toBe(184 + 18);
  });

  it('still draws up to jitterMs for a reset seconds away, and for a Retry-After whatever its length', async () => {
    const c = clocked({ jitterMs: 250, random: () => 0.999 });
    await c.send(200, { 'ratelimit-limit': '10', 'ratelimit-remaining': '0', 'ratelimit-reset': '30' });
    expect(await c.waitMs()).toBe(30_000 + 250);
    const r = clocked({ jitterMs: 250, random: () => 0.999 });
    await r.send(429, { 'retry-after': '1' });
    expect(await r.waitMs()).toBe(1_000 + 250);
  });
});

/** A server as the test scripts it: answers one request at `at` (ms since the Unix epoch) with a status and headers. */
type Server = (at: number) => { status: number; headers: Record<string, string> };

/**
 * koa-ratelimit's sliding log (async-ratelimiter): each admitted request is logged, a refused one is
 * not; X-RateLimit-Reset is the oldest logged request's time plus the window, in Unix seconds
 * rounded DOWN; Retry-After the same, rounded down (0 within the last second).
 */
function slidingLog(limit: number, windowMs: number): Server {
  let log: number[] = [];
  return (at) => {
    log = log.filter((x) => x > at - windowMs);
    const reset = (oldest: number) => Math.floor((oldest + windowMs) / 1000);
    const headers = (remaining: number) => ({ 'x-ratelimit-limit': String(limit), 'x-ratelimit-remaining': String(remaining), 'x-ratelimit-reset': String(reset(log[0] ?? at)) });
    if (log.length >= limit) return { status: 429, headers: { ...headers(0), 'retry-after': String(Math.max(0, Math.floor(reset(log[0]) - at / 1000))) } };
    log.push(at);
    return { status: 200, headers: headers(limit - log.length) };
  };
}

/** A fixed window on the clock's grid, `phaseMs` past whole seconds (not tied to any request), its reset rounded down: the anchor model does not fit it. */
function gridWindow(limit: number, windowMs: number, phaseMs: number): Server {
  let start = -Infinity;
  let used = 0;
  return (at) => {
    const s = Math.floor((at - phaseMs) / windowMs) * windowMs + phaseMs;
    if (s !== start) [start, used] = [s, 0];
    const headers = (remaining: number) => ({ 'x-ratelimit-limit': String(limit), 'x-ratelimit-remaining': String(remaining), 'x-ratelimit-reset': String(Math.floor((s + windowMs) / 1000)) });
    if (used >= limit) return { status: 429, headers: { ...headers(0), 'retry-after': '0' } };
    used++;
    return { status: 200, headers: headers(limit - used) };
  };
}

/**
 * `n` requests one after another through a Pacer on a clock the test moves (no timer runs: a wait is
 * read off the RateLimitWaitError a zero budget throws, then the clock moves by it), each answered
 * `latencyMs` after it is sent. The server's clock is the client's, `epoch` ms since the Unix epoch
 * at pacer time 0. Returns the 429s and the time from the first send to the last answer.
 */
async function run(server: Server, n: number, { epoch = Date.UTC(2026, 11, 1, 12, 0, 0, 437), latencyMs = 3, jitterMs = 0 } = {}) {
  let t = 0;
  // The most jitter every wait may draw.
  const pacer = new Pacer({ jitterMs, random: () => 0.999, maxRetries: 0, now: () => t });
  let tooMany = 0;
  let done = 0;
  while (done < n) {
    let ticket;
    for (;;) {
      try {
        ticket = await pacer.acquire(A, pacer.budget(0));
        break;
      } catch (error) {
        if (!(error instanceof RateLimitWaitError)) throw error;
        t += Math.max(1, Math.ceil(error.waitMs));
      }
    }
    const answer = server(epoch + t + latencyMs / 2);
    t += latencyMs;
    pacer.settle(ticket, { status: answer.status, method: 'GET', headers: answer.headers, attempt: 0, retryAllowed: false }, parseRateLimit(answer.headers, { nowMs: epoch + t }));
    if (answer.status === 429) tooMany++;
    else done++;
  }
  return { tooMany, ms: t };
}

describe('a reset in Unix seconds rounded down, tied to the client\'s own requests (koa-ratelimit)', () => {
  // 60 requests at 10 per 2 s: the fastest is 5 windows (10 s); whole-second resets read to their end took 1.4x and more.
  const fastest = 10_000;

  it.each([[2_000, 437], [2_000, 951], [2_000, 12], [2_370, 600]])(
    'is learned to the ms from the seconds it names: within 1.3x the fastest, one 429 (the one that shows the rounding) (window %i ms, start at ms %i)',
    async (windowMs, startMs) => {
      const r = await run(slidingLog(10, windowMs), 60, { epoch: Date.UTC(2026, 11, 1, 12, 0, 0, startMs) });
      expect(r.tooMany).toBe(1);
      expect(r.ms).toBeLessThanOrEqual(1.3 * fastest * (windowMs / 2_000));
    },
  );

  it('draws no jitter for a moment it worked out from its own requests (no other client waits for it)', async () => {
    for (const startMs of [437, 951, 12, 600, 250, 800]) {
      const r = await run(slidingLog(10, 2_000), 60, { jitterMs: 250, epoch: Date.UTC(2026, 11, 1, 12, 0, 0, startMs) });
      expect(r.tooMany).toBe(1);
      expect(r.ms).toBeLessThanOrEqual(1.3 * fastest);
    }
  });

  it('costs at most one more 429 against a server it does not fit (a window on the clock grid), then reads whole seconds as before', async () => {
    for (const phaseMs of [300, 700]) {
      const r = await run(gridWindow(10, 2_000, phaseMs), 120);
      expect(r.tooMany).toBeLessThanOrEqual(2);
    }
  });
});
