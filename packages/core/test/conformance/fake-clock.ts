// A fake clock in whole ms that only moves when a test moves it; drives MemoryStore and RedisStore alike.

/** 2023-11-14T22:00:00Z: a whole hour, so every window used in the suites starts on it. */
export const T0 = 1_699_999_200_000;

export class FakeClock {
  private t: number;
  constructor(start = T0) {
    this.t = start;
  }
  /** Bound, so it can be handed over as `clock` / `UNSAFE_testClock`. */
  readonly now = (): number => this.t;
  advance(ms: number): void {
    if (!Number.isInteger(ms) || ms < 0) throw new Error(`FakeClock.advance: ${ms} is not a whole number of ms >= 0`);
    this.t += ms;
  }
  /** Steps the clock back, as an NTP step or a failover to a replica whose clock is behind does to Redis TIME. */
  back(ms: number): void {
    if (!Number.isInteger(ms) || ms < 0) throw new Error(`FakeClock.back: ${ms} is not a whole number of ms >= 0`);
    this.t -= ms;
  }
}
