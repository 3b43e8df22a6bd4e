// How many instances share a limit, learned through the store: each process announces itself under a key that expires, and counts the others.
import { base64url, sha256Hex } from '../base/digest';
import { fleetConfigsKey, fleetKey } from '../base/keys';
import type { ResolvedLimit } from '../model/limit';
import type { Store } from '../stores/store';
import type { FleetSource, FleetView } from '../observe/states';

/**
 * This process's id in every fleet it announces itself to: random, made once per process, so two
 * stores (or two clients) of one process to one Redis count as one instance, and a restarted
 * process is a new one (the old id ages out). Made at the first announcement, not when the module
 * loads: a Cloudflare Worker may not generate random values in its global scope (it fails to start).
 */
let instanceId: string | undefined;
export const INSTANCE_ID = (): string => (instanceId ??= base64url(crypto.getRandomValues(new Uint8Array(12))));

/** An announcement is good for this many periods: a process that stops announcing (SIGKILL) leaves the count after about as many. */
export const ANNOUNCE_TTL_PERIODS = 3;

/**
 * After its first announcement an instance announces again at these delays (ms), then once per
 * period: instances that start together (a deploy, a fleet restarted during an attack) each see
 * the others within about a second instead of a whole period later.
 */
const EARLY_DELAYS_MS = [250, 1_000];

/**
 * A count is believed once an announcement at least this long after the instance's first answered
 * one confirms it (or one period, if shorter): instances started together (an autoscaler's) find
 * only those that announced before them at first, a count too small by as many as start with them.
 */
const CONFIRM_MS = 1_000;

type Announce = NonNullable<Store['announce']>;
type Peers = NonNullable<Store['peers']>;

/** The most limiter configurations one instance records (a limiter per distinct request-made limit could make many): past it, no new one is added. */
const MAX_CONFIGS = 256;

/** A limiter's configuration in 8 hex characters: its limits' names, algorithms, sizes and windows (what two apps on one prefix would disagree on). */
export function configDigest(limits: readonly ResolvedLimit[]): string {
  const text = limits.map((l) => `${l.name}/${l.algorithm}/${l.limit}/${l.windowMs}`).join(',');
  return sha256Hex(text).slice(0, 8);
}

/** Whether every digest of `a` is in `b` (a scaled instance that has built fewer limiters so far is still the same app). */
function within(a: readonly string[], b: ReadonlySet<string>): boolean {
  return a.every((d) => b.has(d));
}

/**
 * One prefix's announcement on one connection, shared by every limiter of this process that uses
 * that prefix on it (failure/store-runtime.ts): one timer, one count. The timer is unref'd and
 * holds the fleet weakly: when no limiter holds it any more, it stops.
 */
export class FleetCount implements FleetView {
  instances = 1;
  readonly learning = true;
  /** 'unlearned' until a count is known: 'recorded' (an earlier fleet's on this connection), then 'learned'. */
  source: FleetSource = 'unlearned';
  learnedAt: number | undefined;
  failures = 0;
  private busy = false;
  /** This instance's limiter configurations on this prefix (configDigest), recorded through `peers` at each announcement. */
  private readonly configs = new Set<string>();
  /** Told once when another app records configurations that are not this one's (FG_PREFIX_SHARED); the first limiter's. */
  private shared: ((message: string) => void) | undefined;
  private warned = false;
  /** The counts learned within the last announcement lifetime (performance.now()): `instances` is their largest. */
  private readonly recent: { count: number; at: number }[] = [];
  /** performance.now() of the first answered announcement: its count is believed from CONFIRM_MS later. */
  private firstAnswerAt: number | undefined;

  constructor(
    readonly prefix: string,
    private readonly announce: Announce,
    readonly periodMs: number,
    /** The count an earlier fleet of this prefix on this connection learned, if any: the start instead of 1. */
    known?: number,
    /** Told each count learned (the connection keeps the last one for the next fleet of this prefix). */
    private readonly learned: (count: number) => void = () => undefined,
    /** The store's record of each instance's configurations; without it, sharing goes unnoticed. */
    private readonly peers?: Peers,
  ) {
    if (known !== undefined) {
      this.instances = known;
      this.source = 'recorded';
      this.recent.push({ count: known, at: performance.now() });
    }
    const ref = new WeakRef(this);
    const delays = [0, ...EARLY_DELAYS_MS.filter((d) => d < periodMs)];
    let step = 0;
    const tick = (): void => {
      const fleet = ref.deref();
      if (!fleet) return;
      fleet.once();
      const delay = step < delays.length - 1 ? delays[step + 1] - delays[step] : periodMs;
      step++;
      setTimeout(tick, delay).unref();
    };
    setTimeout(tick, 0).unref();
  }

  /**
   * A limiter of this instance on this prefix: its configuration joins the ones this instance
   * records, and `warn` (the first limiter's) is told once if another app shares the prefix.
   */
  register(digest: string, warn: (message: string) => void): void {
    if (this.configs.size < MAX_CONFIGS) this.configs.add(digest);
    this.shared ??= warn;
  }

  /**
   * Records this instance's configurations and compares the others': an instance whose set neither
   * holds nor is held by this one's is another app (scaled instances of one app build the same
   * limiters, some maybe later than others). Two apps configured alike cannot be told apart.
   */
  private compare(): void {
    // Recorded at every announcement, warned or not: an app that starts later must still find this one.
    if (!this.peers || this.configs.size === 0) return;
    const own = [...this.configs].sort();
    const mine = new Set(own);
    let pending: Promise<readonly string[]>;
    try {
      pending = this.peers(fleetConfigsKey(this.prefix), INSTANCE_ID(), own.join(','), ANNOUNCE_TTL_PERIODS * this.periodMs);
    } catch (error) {
      pending = Promise.reject(error);
    }
    pending.then((values) => {
      const other = values.map((v) => v.split(',').filter(Boolean)).find((theirs) => !within(theirs, mine) && !within(own, new Set(theirs)));
      if (!other || this.warned) return;
      this.warned = true;
      this.shared?.(
        `another app uses the prefix '${this.prefix}' on this Redis with limiters configured otherwise (limiter configurations: theirs ${other.length}, this app's ${own.length}, neither set holding the other): the two share every bucket their keys have in common and count each other's instances, so each instance's share in an outage is too small. Give each app its own prefix (the \`prefix\` option, e.g. prefix: 'fg-billing'; docs/errors.md#fg-prefix-shared)`,
      );
    }, () => undefined);
  }

  /** One announcement; its answer is the new count. Never overlaps the previous one; a failure keeps the last count. */
  private once(): void {
    if (this.busy) return;
    this.busy = true;
    let pending: Promise<number>;
    try {
      pending = this.announce(fleetKey(this.prefix), INSTANCE_ID(), ANNOUNCE_TTL_PERIODS * this.periodMs);
    } catch (error) {
      pending = Promise.reject(error);
    }
    pending.then(
      (count) => {
        this.busy = false;
        // This instance has just announced itself: it counts at least itself. A drop is believed
        // only once it has lasted an announcement's lifetime: a Redis restarted without its data
        // (or a failover to a replica that had not the ZSET yet) counts the fleet from zero, each
        // instance finding only those that announced since, and a share cut for a fleet of one then
        // would let a fleet of N admit N limits in the next outage. The safe side: smaller shares
        // for one lifetime more, whereas a dead instance leaves the count about 3 periods later.
        const now = performance.now();
        this.recent.push({ count: Math.max(1, Math.floor(count)), at: now });
        const lifetime = ANNOUNCE_TTL_PERIODS * this.periodMs;
        while (this.recent.length > 1 && this.recent[0].at < now - lifetime) this.recent.shift();
        this.instances = Math.max(...this.recent.map((r) => r.count));
        this.firstAnswerAt ??= now;
        // Not believed before it is confirmed: until then the start stands (recorded, or none).
        if (now - this.firstAnswerAt < Math.min(CONFIRM_MS, this.periodMs) && this.source !== 'learned') return;
        this.source = 'learned';
        this.learnedAt = Date.now();
        this.learned(this.instances);
        this.compare();
      },
      () => {
        this.busy = false;
        this.failures++;
        // The count is kept while the store is away, and counts as learned now: after an outage
        // longer than a lifetime, a Redis back without its data must not be believed at its first
        // answer either (the old count would otherwise be a lifetime old and dropped at once).
        this.recent.splice(0, this.recent.length, { count: this.instances, at: performance.now() });
      },
    );
  }
}

/** A fleet of one that learns nothing: a fixed `instances`, or a store that cannot announce (MemoryStore, a custom store). */
export function fixedFleet(prefix: string, instances: number): FleetView {
  return { instances, learnedAt: undefined, failures: 0, prefix, learning: false, source: 'fixed' };
}
