// The simulation the page runs: preset streams, the busiest-span count, and core's twins deciding.
import { ALGORITHMS } from '@floodgate/core';
import { DEFAULT_SETTINGS, PRESETS, Simulation, denseRuns, maxInSpan, runScenario, scenario } from '../web/simulation';

describe('maxInSpan', () => {
  it('counts the most times inside any half-open span', () => {
    expect(maxInSpan([], 10)).toEqual({ count: 0, fromMs: 0 });
    expect(maxInSpan([0, 5, 9, 10, 11, 30], 10)).toEqual({ count: 4, fromMs: 5 });
    expect(maxInSpan([0, 20, 21, 22, 29, 30], 10)).toEqual({ count: 4, fromMs: 20 });
    // Equal times all count; the span end is exclusive.
    expect(maxInSpan([5, 5, 5, 15], 10)).toEqual({ count: 3, fromMs: 5 });
  });
});

describe('presets', () => {
  it('are sorted, inside the timeline, and deterministic', () => {
    for (const preset of PRESETS) {
      const a = scenario(preset, DEFAULT_SETTINGS);
      expect(a.times.length).toBeGreaterThan(0);
      expect([...a.times].sort((x, y) => x - y)).toEqual(a.times);
      expect(a.times[0]).toBeGreaterThanOrEqual(0);
      expect(a.times[a.times.length - 1]).toBeLessThan(a.durationMs);
      expect(scenario(preset, DEFAULT_SETTINGS)).toEqual(a);
    }
  });

  it('boundary puts the limit just before a window edge and the limit just after it', () => {
    const { limit, windowMs } = DEFAULT_SETTINGS;
    const { times } = scenario('boundary', DEFAULT_SETTINGS);
    expect(times.filter((t) => t < windowMs)).toHaveLength(limit);
    expect(times.filter((t) => t >= windowMs)).toHaveLength(limit);
    expect(times[times.length - 1] - times[0]).toBeLessThan(windowMs);
  });

  it('boundary frames the window edge: half a window either side, every request inside, the edge in the middle', () => {
    const { windowMs } = DEFAULT_SETTINGS;
    const { times, view } = scenario('boundary', DEFAULT_SETTINGS);
    expect(view).toEqual({ fromMs: 0.5 * windowMs, toMs: 1.5 * windowMs });
    expect(times.every((t) => t >= view.fromMs && t <= view.toMs)).toBe(true);
    // The requests cover 40% of the drawn width, not a fifth of it as on the whole 2-window axis.
    expect((times[times.length - 1] - times[0]) / (view.toMs - view.fromMs)).toBeGreaterThan(0.35);
    for (const preset of PRESETS.filter((p) => p !== 'boundary')) {
      const sc = scenario(preset, DEFAULT_SETTINGS);
      expect(sc.view).toEqual({ fromMs: 0, toMs: sc.durationMs });
    }
  });

  it('caps a huge stream at the page bound', () => {
    const { times } = scenario('steady', { limit: 10, windowMs: 3_600_000, ratePerSecond: 50 });
    expect(times).toHaveLength(2_000);
  });
});

describe('runScenario', () => {
  it.each([1, 7, 10, 50])('boundary with limit %i: fixed window admits 2x in one window-long span, the log exactly the limit', (limit) => {
    const settings = { ...DEFAULT_SETTINGS, limit };
    const { simulation } = runScenario('boundary', settings);
    const lane = (name: string) => simulation.lanes.find((l) => l.algorithm === name)!;
    expect(simulation.maxAdmittedInWindow(lane('fixed-window')).count).toBe(2 * limit);
    expect(simulation.maxAdmittedInWindow(lane('sliding-window-log')).count).toBe(limit);
    expect(lane('sliding-window-log').denied).toBe(limit);
  });

  it('runs every algorithm of core, each from its own state', () => {
    const { simulation, scenario: sc } = runScenario('quiet-then-burst', DEFAULT_SETTINGS);
    expect(simulation.lanes.map((l) => l.algorithm)).toEqual([...ALGORITHMS]);
    for (const lane of simulation.lanes) {
      expect(lane.admitted + lane.denied).toBe(sc.times.length);
      // After two quiet windows every algorithm has its full limit (or burst) and no more at once.
      expect(lane.admitted).toBeGreaterThanOrEqual(DEFAULT_SETTINGS.limit);
      expect(lane.outcomes.slice(0, DEFAULT_SETTINGS.limit).every((o) => o.allowed)).toBe(true);
    }
  });

  it('token-bucket and gcra refill at limit / window, the library default', () => {
    const sim = new Simulation({ limit: 10, windowMs: 10_000, ratePerSecond: 1 });
    const tb = sim.lanes.find((l) => l.algorithm === 'token-bucket')!;
    expect(tb.storeLimit).toEqual({ algorithm: 'token-bucket', capacity: 10, refillPerSecond: 1 });
  });

  it('rejects bad settings with the library option error', () => {
    expect(() => new Simulation({ limit: 0, windowMs: 10_000, ratePerSecond: 1 })).toThrow(/FG_INVALID_OPTION/);
    expect(() => new Simulation({ limit: 2.5, windowMs: 10_000, ratePerSecond: 1 })).toThrow(/limit/);
  });
});

describe('denseRuns', () => {
  it('gives a burst too dense to count by eye its count, admitted and denied apart; spaced requests get none', () => {
    const { scenario: sc, simulation } = runScenario('burst', DEFAULT_SETTINGS);
    const log = simulation.lanes.find((l) => l.algorithm === 'sliding-window-log')!;
    const runs = denseRuns(log.outcomes, sc);
    expect(runs.length).toBeGreaterThan(0);
    // The burst is 2 x limit requests in 0.06 windows; most are denied, in one block that gets its count.
    const w = DEFAULT_SETTINGS.windowMs;
    const deniedInBurst = log.outcomes.filter((o) => !o.allowed && o.t >= 1.4 * w && o.t < 1.46 * w).length;
    expect(deniedInBurst).toBeGreaterThanOrEqual(DEFAULT_SETTINGS.limit);
    const denied = runs.filter((run) => !run.allowed);
    expect(denied).toHaveLength(1);
    // A steady request that lands inside the burst is in the block too.
    expect(denied[0].count).toBeGreaterThanOrEqual(deniedInBurst);
    expect(denied[0].count).toBeLessThanOrEqual(deniedInBurst + 2);
    expect(denseRuns(runScenario('steady', DEFAULT_SETTINGS).simulation.lanes[0].outcomes, scenario('steady', DEFAULT_SETTINGS))).toEqual([]);
  });
});
