// The playground's simulation: request streams for each preset, run through core's own MemoryStore on a simulated clock.
// Imports only browser-safe core modules (never index.ts: keys.ts and redis-store.ts need node:crypto).
import { ALGORITHMS, type AlgorithmName, type StoreLimit } from '../../../packages/core/src/algorithms/registry';
import { resolveLimiterOptions } from '../../../packages/core/src/engine/options';
import { MemoryStore } from '../../../packages/core/src/stores/memory-store';

export const PRESETS = ['steady', 'burst', 'boundary', 'quiet-then-burst'] as const;
export type PresetName = (typeof PRESETS)[number];

export const PRESET_TEXT: Record<PresetName, string> = {
  steady: 'An even stream at the chosen rate for three windows.',
  burst: 'The steady stream, plus a burst of twice the limit in the middle window.',
  boundary: 'The limit just before a window edge, and the limit again just after it.',
  'quiet-then-burst': 'Two quiet windows, then a burst of twice the limit.',
};

export interface Settings {
  /** Requests admitted per window; the burst for token-bucket and gcra. */
  limit: number;
  windowMs: number;
  /** The stream's rate in requests per simulated second (steady and burst presets). */
  ratePerSecond: number;
}

export const DEFAULT_SETTINGS: Settings = { limit: 10, windowMs: 10_000, ratePerSecond: 2 };

/** Bounds the page accepts, so a timeline stays readable; the library itself accepts far more. */
export const BOUNDS = {
  limit: { min: 1, max: 200 },
  windowSeconds: { min: 1, max: 3600 },
  ratePerSecond: { min: 0.1, max: 50 },
  requests: 2_000,
} as const;

export interface Scenario {
  preset: PresetName;
  /** Length of the timeline in simulated ms. */
  durationMs: number;
  /** Request arrival times in ms from the start, ascending. */
  times: number[];
  /** The part of the timeline drawn, [fromMs, toMs]: all of it, except where the story is one instant (the boundary's window edge). */
  view: { fromMs: number; toMs: number };
}

/** Evenly spaced arrivals: `count` requests from `from` (inclusive) to `to` (exclusive). */
function spread(from: number, to: number, count: number): number[] {
  const step = (to - from) / count;
  return Array.from({ length: count }, (_, i) => Math.round(from + i * step));
}

function steady(durationMs: number, ratePerSecond: number): number[] {
  const gap = 1000 / ratePerSecond;
  const count = Math.min(BOUNDS.requests, Math.floor(durationMs / gap));
  return Array.from({ length: count }, (_, i) => Math.round(gap / 2 + i * gap));
}

/** The request stream of one preset. Pure: the same settings give the same stream. */
export function scenario(preset: PresetName, settings: Settings): Scenario {
  const { limit: l, windowMs: w, ratePerSecond } = settings;
  let durationMs: number;
  let times: number[];
  let view: { fromMs: number; toMs: number } | undefined;
  switch (preset) {
    case 'steady':
      durationMs = 3 * w;
      times = steady(durationMs, ratePerSecond);
      break;
    case 'burst':
      durationMs = 3 * w;
      times = [...steady(durationMs, ratePerSecond), ...spread(1.4 * w, 1.46 * w, 2 * l)];
      break;
    case 'boundary':
      // Both halves fit well inside one window-long span (0.8w to 1.2w), but not inside one fixed window.
      durationMs = 2 * w;
      times = [...spread(0.8 * w, w, l), ...spread(w, 1.2 * w, l)];
      // Half a window either side of the edge: the edge in the middle, the two halves 40% of the width
      // (drawn on all 2w, everything happened in a fifth of the axis).
      view = { fromMs: 0.5 * w, toMs: 1.5 * w };
      break;
    case 'quiet-then-burst':
      durationMs = 3 * w;
      times = spread(2.3 * w, 2.4 * w, 2 * l);
      break;
    default:
      throw new Error(`unknown preset ${String(preset)}`);
  }
  times.sort((a, b) => a - b);
  if (times.length > BOUNDS.requests) times = times.slice(0, BOUNDS.requests);
  return { preset, durationMs, times, view: view ?? { fromMs: 0, toMs: durationMs } };
}

/** The most items of sorted `times` inside any half-open span [s, s + spanMs), and where it starts. */
export function maxInSpan(times: readonly number[], spanMs: number): { count: number; fromMs: number } {
  let best = { count: 0, fromMs: 0 };
  let end = 0;
  for (let start = 0; start < times.length; start++) {
    if (end < start) end = start;
    while (end < times.length && times[end] < times[start] + spanMs) end++;
    if (end - start > best.count) best = { count: end - start, fromMs: times[start] };
  }
  return best;
}

export interface Outcome {
  /** ms from the start of the run. */
  t: number;
  allowed: boolean;
  remaining: number;
}

export interface Lane {
  algorithm: AlgorithmName;
  /** What the limiter resolved the settings to, as sent to the store. */
  storeLimit: StoreLimit;
  outcomes: Outcome[];
  admitted: number;
  denied: number;
}

/**
 * One run: a MemoryStore per algorithm, all reading one simulated clock. The first window edge is
 * aligned to a multiple of the window, as fixed-window's `floor(now / window)` aligns it.
 */
export class Simulation {
  readonly lanes: Lane[];
  private readonly stores: MemoryStore[];
  private readonly origin: number;
  private now: number;

  constructor(readonly settings: Settings) {
    this.origin = Math.ceil(1_700_000_000_000 / settings.windowMs) * settings.windowMs;
    this.now = this.origin;
    const clock = () => this.now;
    this.stores = ALGORITHMS.map(() => new MemoryStore({ clock, maxKeys: 16 }));
    this.lanes = ALGORITHMS.map((algorithm, i) => {
      // The library's own option parsing: bad settings throw its FG_INVALID_OPTION errors here.
      const resolved = resolveLimiterOptions({
        algorithm,
        limit: settings.limit,
        windowMs: settings.windowMs,
        store: this.stores[i],
      });
      return { algorithm, storeLimit: resolved.limits[0].store, outcomes: [], admitted: 0, denied: 0 };
    });
  }

  /** One request at `t` ms from the start, through every algorithm. */
  request(t: number): Outcome[] {
    this.now = this.origin + t;
    return this.lanes.map((lane, i) => {
      const result = this.stores[i].evaluateSync({
        keys: ['playground:subject'],
        limits: [lane.storeLimit],
        cost: 1,
        mode: 'consume',
      });
      const outcome: Outcome = { t, allowed: result.allowed, remaining: result.results[0].remaining };
      lane.outcomes.push(outcome);
      if (outcome.allowed) lane.admitted++;
      else lane.denied++;
      return outcome;
    });
  }

  /** The most requests this lane admitted in any window-long span. */
  maxAdmittedInWindow(lane: Lane): { count: number; fromMs: number } {
    return maxInSpan(
      lane.outcomes.filter((o) => o.allowed).map((o) => o.t),
      this.settings.windowMs,
    );
  }
}

/** Runs a whole scenario at once (tests, and the page's "instant" speed). */
export function runScenario(preset: PresetName, settings: Settings): { scenario: Scenario; simulation: Simulation } {
  const s = scenario(preset, settings);
  const simulation = new Simulation(settings);
  for (const t of s.times) simulation.request(t);
  return { scenario: s, simulation };
}

/** How each algorithm reads the settings, in words. */
export function describeLimit(limit: StoreLimit): string {
  if ('refillPerSecond' in limit) {
    const rate = Number.isInteger(limit.refillPerSecond) ? String(limit.refillPerSecond) : limit.refillPerSecond.toFixed(2);
    return `burst ${limit.capacity}, refill ${rate}/s`;
  }
  if ('leaseMs' in limit) return `${limit.capacity} in flight, each held ${formatSeconds(limit.leaseMs)}`;
  return `${limit.capacity} per ${formatSeconds(limit.windowMs)}`;
}

export function formatSeconds(ms: number): string {
  const s = ms / 1000;
  return `${Number.isInteger(s) ? s : s.toFixed(1)} s`;
}

/** Ticks closer than this share of the track's width merge into one block: such a run gets its count beside it. */
const CLUSTER_SHARE = 0.008;
/** Runs shorter than this are countable by eye. */
const CLUSTER_MIN = 4;

/** Runs of outcomes (admitted or denied, taken apart) too dense to count by eye: where each ends and how many it holds. */
export function denseRuns(outcomes: readonly { t: number; allowed: boolean }[], sc: Scenario): { allowed: boolean; lastT: number; count: number }[] {
  const span = sc.view.toMs - sc.view.fromMs;
  const runs: { allowed: boolean; lastT: number; count: number }[] = [];
  for (const allowed of [true, false]) {
    let last = -Infinity;
    let count = 0;
    const flush = () => {
      if (count >= CLUSTER_MIN) runs.push({ allowed, lastT: last, count });
    };
    for (const o of outcomes) {
      if (o.allowed !== allowed) continue;
      if ((o.t - last) / span < CLUSTER_SHARE) count++;
      else {
        flush();
        count = 1;
      }
      last = o.t;
    }
    flush();
  }
  return runs;
}
