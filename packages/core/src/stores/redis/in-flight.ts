// RedisStore's bound on script calls in flight on one Redis node (`maxInFlight`): past it a call waits in this process for a free place, within its deadline, and is never sent if none frees.

/** A call waiting for a free place. */
interface Waiting {
  /** performance.now() at its deadline. */
  readonly until: number;
  /** Sends it, with what is left of its deadline. */
  go(budgetMs: number): void;
  /** Its deadline passed before a place freed: it is never sent. */
  refuse(): void;
}

/**
 * The calls in flight on one node and those waiting for one of them to end. A call counts from the
 * moment it is sent until Redis answers it or the connection fails it, late answers included: a
 * call that timed out still occupies Redis until it runs. Deadlines come in order (every call of a
 * store has the same), so one timer, for the oldest waiting call, serves them all.
 */
export class InFlightLane {
  inFlight = 0;
  private readonly waiting: Waiting[] = [];
  private timer: NodeJS.Timeout | undefined;

  /**
   * `now`: the monotonic clock in ms (performance.now); the tests give their own, to reach what a
   * late timer reaches (a release after a waiting call's deadline, before its timer ran).
   */
  constructor(
    readonly max: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** True when nothing is in flight nor waiting: the lane may be dropped. */
  get idle(): boolean {
    return this.inFlight === 0 && this.waiting.length === 0;
  }

  /** Takes a place now if there is one (the caller sends the call and calls `release` when it ends). */
  tryTake(): boolean {
    if (this.inFlight >= this.max) return false;
    this.inFlight++;
    return true;
  }

  /** Waits for a place within `budgetMs`: `go` with the place taken and what is left of the budget, else `refuse`. */
  wait(budgetMs: number, go: (budgetMs: number) => void, refuse: () => void): void {
    this.waiting.push({ until: this.now() + budgetMs, go, refuse });
    if (this.waiting.length === 1) this.arm();
  }

  /** A call left Redis (answered or failed): the first waiting call that still has time takes its place. */
  readonly release = (): void => {
    this.inFlight--;
    // The clock only when a call waits: most releases find none.
    if (this.waiting.length === 0) return;
    const now = this.now();
    while (this.inFlight < this.max && this.waiting.length > 0) {
      const next = this.waiting.shift()!;
      if (next.until > now) {
        this.inFlight++;
        next.go(next.until - now);
      } else next.refuse();
    }
    if (this.waiting.length === 0 && this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
  };

  /** One timer for the waiting calls: each fails at its own deadline. */
  private arm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const head = this.waiting[0];
    if (!head) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      const now = this.now();
      while (this.waiting.length > 0 && this.waiting[0].until <= now) this.waiting.shift()!.refuse();
      this.arm();
    }, Math.max(0, head.until - this.now()));
  }
}
