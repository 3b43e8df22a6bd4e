// The accuracy computation: the exact sliding count, and each algorithm's known worst cases, on small numbers.
import { PATTERNS, admittedTimes, maxInWindow, measureAccuracy } from '../src/accuracy';

const pattern = (name: string) => PATTERNS.find((p) => p.name === name)!;

describe('maxInWindow', () => {
  it('counts the most timestamps in any half-open window-long span', () => {
    expect(maxInWindow([], 1000)).toBe(0);
    expect(maxInWindow([5], 1000)).toBe(1);
    // [0, 1000) holds 0 and 999; [999, 1999) holds 999 and 1000; never all three.
    expect(maxInWindow([1000, 0, 999], 1000)).toBe(2);
    expect(maxInWindow([0, 0, 0, 1000, 1000], 1000)).toBe(3);
    expect(maxInWindow([0, 500, 999, 1500, 1998], 1000)).toBe(3);
  });
});

describe('adversarial patterns against the exact log (limit 10 per 1000 ms)', () => {
  const L = 10;
  const W = 1000;

  it('fixed-window admits twice its limit across a window edge', async () => {
    const row = await measureAccuracy('fixed-window', L, W, [pattern('boundary-burst')]);
    expect(row.patterns[0]).toMatchObject({ attempts: 40, admitted: 20, maxInWindow: 20, ratio: 2 });
  });

  it('sliding-window-log is exact under every pattern', async () => {
    const row = await measureAccuracy('sliding-window-log', L, W);
    expect(row.patterns.map((p) => p.maxInWindow)).toEqual([L, L, L]);
    expect(row.worstRatio).toBe(1);
  });

  it("sliding-window-counter holds the boundary but not the late-burst pair", async () => {
    const row = await measureAccuracy('sliding-window-counter', L, W, [pattern('boundary-burst'), pattern('late-burst-pair')]);
    expect(row.patterns[0].maxInWindow).toBe(L);
    // At t = 1998 the first burst (t = 999) weighs 10 x 2/1000 = 0.02, so 9 more fit: 19 within 999 ms.
    expect(row.patterns[1].maxInWindow).toBe(19);
    expect(row.worstRatio).toBeCloseTo(1.9);
  });

  it('token-bucket allows a full burst plus a window of refill', async () => {
    // 10 tokens at t = 999; 999 ms later 9.99 have come back, so 9 more.
    const times = await admittedTimes('token-bucket', L, W, pattern('late-burst-pair').times(L, W));
    expect(times.filter((t) => t === 999)).toHaveLength(10);
    expect(times.filter((t) => t === 1998)).toHaveLength(9);
    expect(maxInWindow(times, W)).toBe(19);
  });

  it('every algorithm holds a steady flood to its limit per window, or burst + refill for the buckets', async () => {
    for (const algorithm of ['fixed-window', 'sliding-window-log', 'sliding-window-counter'] as const) {
      const row = await measureAccuracy(algorithm, L, W, [pattern('steady-flood')]);
      expect(row.patterns[0].maxInWindow).toBe(L);
    }
    const gcra = await measureAccuracy('gcra', L, W, [pattern('steady-flood')]);
    expect(gcra.patterns[0].maxInWindow).toBeGreaterThan(L);
    expect(gcra.patterns[0].maxInWindow).toBeLessThanOrEqual(2 * L);
  });
});
