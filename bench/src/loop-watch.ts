// How long this process's event loop stood still, tick by tick: what an answer's lateness owes to the process, not to Floodgate.

/** One tick: when it ran, and how much later than its period it ran. */
export interface Tick {
  at: number;
  stall: number;
}

/**
 * The time within [from, to] covered by the ticks' stalls, each the span [at - stall, at] (the
 * tick was due at its start, a period after the tick before it, and ran at its end). Ticks are in
 * order, so their stalls are too: the first that starts at or after `to` ends the search.
 */
export function stallOverlap(ticks: readonly Tick[], from: number, to: number): number {
  let sum = 0;
  for (const t of ticks) {
    if (t.stall <= 0 || t.at <= from) continue;
    const start = t.at - t.stall;
    if (start >= to) break;
    sum += Math.min(to, t.at) - Math.max(from, start);
  }
  return sum;
}

/**
 * Ticks every `tickMs` and records how much later than asked each tick ran. A response is allowed
 * to be late by the stall that happened while it was in flight: on a shared 2-core machine a GC or
 * a neighbour's test run stops the loop for tens, sometimes hundreds, of ms, and no library can
 * answer while its loop is stopped. A wait inside Floodgate (a call hung on a paused Redis, a queue
 * behind other calls) does not stop the loop, so it still shows in full.
 */
export class LoopWatch {
  private readonly ticks: Tick[] = [];
  private last = performance.now();
  /** The longest single stall seen since the watch started. */
  worst = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly tickMs = 10,
    /** How long ticks are kept (answers are judged within this long of their end). */
    private readonly keepMs = 15_000,
  ) {
    this.timer = setInterval(() => {
      const now = performance.now();
      const stall = Math.max(0, now - this.last - this.tickMs);
      this.last = now;
      this.worst = Math.max(this.worst, stall);
      this.ticks.push({ at: now, stall });
      while (this.ticks.length > 0 && this.ticks[0].at < now - this.keepMs) this.ticks.shift();
    }, this.tickMs);
  }

  /**
   * How long, within [from, to] (performance.now() times), the process could not run at all: the
   * overlap of that span with each stall, a stall being the time before a tick that the tick waited
   * past its period ([at - stall, at]). An answer delivered in the middle of a long block (the
   * loop busy with 400 other answers, or the process off the CPU) owes it the part of that block
   * before it, though the tick that measures the block only comes after the answer; a block that
   * ended before `from` owes it nothing.
   */
  stalledWithin(from: number, to: number): number {
    return stallOverlap(this.ticks, from, to);
  }

  /** The longest single stall that ended within [from, to + tickMs]. */
  worstWithin(from: number, to: number): number {
    let worst = 0;
    for (const t of this.ticks) if (t.at >= from && t.at <= to + this.tickMs) worst = Math.max(worst, t.stall);
    return worst;
  }

  /** The ticks that ended within [from, to + tickMs], as [ms after from, stall] pairs (for tracing). */
  ticksWithin(from: number, to: number): [number, number][] {
    return this.ticks.filter((t) => t.at >= from && t.at <= to + this.tickMs).map((t) => [Math.round(t.at - from), Math.round(t.stall)]);
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
