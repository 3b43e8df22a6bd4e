// Issue #46's last gap: waits for a reset to the ms (Floodgate's fields) draw jitter in proportion, on a clock the test moves.
import { Pacer, RateLimitWaitError } from '../src';

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
