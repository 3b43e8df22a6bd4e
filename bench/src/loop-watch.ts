// How long this process's event loop stood still, tick by tick: what an answer's lateness owes to the process, not to Floodgate.

/**
 * Ticks every `tickMs` and records how much later than asked each tick ran. A response is allowed
 * to be late by the stall that happened while it was in flight: on a shared 2-core machine a GC or
 * a neighbour's test run stops the loop for tens, sometimes hundreds, of ms, and no library can
 * answer while its loop is stopped. A wait inside Floodgate (a call hung on a paused Redis, a queue
 * behind other calls) does not stop the loop, so it still shows in full.
 */
export class LoopWatch {
  private readonly ticks: { at: number; stall: number }[] = [];
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

  /** The stalls that ended within [from, to + tickMs] (performance.now() times): time the process could not run at all. */
  stalledWithin(from: number, to: number): number {
    let sum = 0;
    for (const t of this.ticks) if (t.at >= from && t.at <= to + this.tickMs) sum += t.stall;
    return sum;
  }

  /** The longest single stall that ended within [from, to + tickMs]. */
  worstWithin(from: number, to: number): number {
    let worst = 0;
    for (const t of this.ticks) if (t.at >= from && t.at <= to + this.tickMs) worst = Math.max(worst, t.stall);
    return worst;
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
