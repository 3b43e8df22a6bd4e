// Worker utilisation shedding: this instance watches its own event loop and, past a threshold, sheds the lowest priority class first, with hysteresis.
import { invalidOption } from '../base/errors';
import { checkOptionNames, oneOf, optionNames } from '../base/validate';
import type { SheddingStats } from '../observe/states';
import type { Performance as NodePerformance } from 'node:perf_hooks';

// Node's global performance, typed as Node's even in a program that also loads the DOM lib (graphql-yoga's fetch types do), where `performance` would be the DOM's.
const loop = performance as unknown as NodePerformance;

/** A route's priority class: the order load is shed in is background, then default; critical never. */
export const PRIORITIES = ['critical', 'default', 'background'] as const;
export type Priority = (typeof PRIORITIES)[number];

export interface SheddingOptions {
  /**
   * Event-loop utilisation (0 to 1: the share of time the loop was busy, `performance.eventLoopUtilization`)
   * over one sample at or above which this instance is overloaded. From 0.5 to 1. Default 0.9.
   */
  utilization?: number;
  /** A sample's timer firing this many ms late also counts as overloaded (the loop was blocked). From 10 to 10_000. Default 200. */
  delayMs?: number;
  /** How often the loop is sampled, in ms. From 50 to 10_000. Default 500. */
  sampleMs?: number;
}

const SHEDDING_OPTION_NAMES = optionNames<SheddingOptions>()(['utilization', 'delayMs', 'sampleMs']);

export interface ResolvedShedding {
  readonly utilization: number;
  readonly delayMs: number;
  readonly sampleMs: number;
}

function numberIn(option: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) invalidOption(option, value, `a number from ${min} to ${max}`);
  return value;
}

/** `shedding`: false or undefined (off), true (the defaults), or the options. */
export function resolveShedding(raw: SheddingOptions | boolean | undefined): ResolvedShedding | undefined {
  if (raw === undefined || raw === false) return undefined;
  const o = raw === true ? {} : raw;
  if (!o || typeof o !== 'object' || Array.isArray(o)) invalidOption('shedding', raw, 'true, false or an object { utilization, delayMs, sampleMs }');
  checkOptionNames('shedding', o, SHEDDING_OPTION_NAMES);
  return {
    utilization: numberIn('shedding.utilization', o.utilization ?? 0.9, 0.5, 1),
    delayMs: numberIn('shedding.delayMs', o.delayMs ?? 200, 10, 10_000),
    sampleMs: numberIn('shedding.sampleMs', o.sampleMs ?? 500, 50, 10_000),
  };
}

/** `priority`: one of PRIORITIES; default 'default'. */
export const resolvePriority = (raw: unknown): Priority => oneOf('priority', raw, PRIORITIES, 'default');

/**
 * Levels: 0 sheds nothing, 1 sheds background, 2 sheds background and default; critical is never
 * shed. Each overloaded sample (utilisation at or above the threshold, or the sample's timer late by
 * `delayMs`) raises the level by one, so the lowest class always goes first; it comes down one level
 * only after 3 calm samples in a row (utilisation under 80% of the threshold and the timer late by
 * under half of `delayMs`). Between the two, it holds: the hysteresis that keeps it from flapping.
 * One timer, unref'd (it never keeps the process alive); no store call.
 */
export class LoadShedder {
  private level = 0;
  private calm = 0;
  private last = { utilization: 0, delayMs: 0 };
  private readonly shed = { background: 0, default: 0 };
  private previous = loop.eventLoopUtilization();
  private expected: number;
  private readonly timer: ReturnType<typeof setInterval>;

  constructor(private readonly o: ResolvedShedding) {
    this.expected = performance.now() + o.sampleMs;
    this.timer = setInterval(() => this.sample(), o.sampleMs);
    this.timer.unref?.();
  }

  /** Whether a request of this class is shed now (counted when it is). */
  sheds(priority: Priority): boolean {
    if (priority === 'critical' || this.level === 0) return false;
    if (priority === 'background' || this.level >= 2) {
      this.shed[priority]++;
      return true;
    }
    return false;
  }

  /** Seconds a shed client is told to wait: the sample interval, at least 1 s. */
  get retryAfterMs(): number {
    return Math.max(1000, this.o.sampleMs);
  }

  get stats(): SheddingStats {
    return { level: this.level, utilization: this.last.utilization, delayMs: this.last.delayMs, shed: { ...this.shed } };
  }

  /** For the metrics (`floodgate.shed`): what it has shed, by class. */
  readonly by = 'worker' as const;
  get shedCounts(): { readonly background: number; readonly default: number } {
    return this.shed;
  }

  /** Stops sampling (tests; a shedder otherwise lives as long as its limiter). */
  stop(): void {
    clearInterval(this.timer);
  }

  private sample(): void {
    const now = performance.now();
    const delayMs = Math.max(0, now - this.expected);
    this.expected = now + this.o.sampleMs;
    const current = loop.eventLoopUtilization();
    const utilization = loop.eventLoopUtilization(current, this.previous).utilization;
    this.previous = current;
    this.observe({ utilization, delayMs });
  }

  /**
   * One sample's effect on the level (the hysteresis above). Called by the sampler's timer; the
   * tests call it with the samples they choose, so the steps are checked without a clock.
   */
  observe({ utilization, delayMs }: { utilization: number; delayMs: number }): void {
    this.last = { utilization, delayMs };
    if (utilization >= this.o.utilization || delayMs >= this.o.delayMs) {
      this.level = Math.min(2, this.level + 1);
      this.calm = 0;
    } else if (utilization < this.o.utilization * 0.8 && delayMs < this.o.delayMs / 2) {
      if (++this.calm >= 3 && this.level > 0) {
        this.level--;
        this.calm = 0;
      }
    } else {
      this.calm = 0;
    }
  }
}
