// HotKeyStore: a Store wrapper that serves hot subjects from quota leased in blocks from the real store.
import { LRUCache } from 'lru-cache';
import { ALGORITHM, periodOf, type StoreLimit } from '../algorithms/registry';
import type { LimitResult } from '../algorithms/types';
import { parseDuration, type Duration } from '../base/duration';
import { FloodgateError, invalidOption } from '../base/errors';
import { withDeadline } from '../base/deadline';
import type { HotKeyCounts } from '../observe/metrics';
import { checkOptionNames, clockOption, MAX_INSTANCES, MAX_UNITS, optionNames, optionsObject, wholeNumber } from '../base/validate';
import { storeOption, type Store, type StoreRequest, type StoreResult } from '../stores/store';

/**
 * Hot-key mode. A subject this instance sees at `threshold` requests per second or more is served
 * from a lease: `leaseSize` units drawn from the shared store in ONE atomic consume of that cost,
 * then handed out locally until used up or expired. Leases only come out of the real budget, so
 * the window algorithms never admit more than their limit; see docs/scaling.md for the bounds.
 */
export interface HotKeyOptions {
  /**
   * How many instances (processes, pods) share the limit. An instance never leases more than its
   * share, `limit / instances`, at once, and the default lease is sized from it. Default: the
   * limiter's `instances` when it is a number (the one `failMode: 'local'` uses), else 1 (a learned
   * count is not used: it changes while leases are out). Set it: with 1, each
   * instance may lease up to the whole limit.
   */
  instances?: number;
  /** Requests per second this instance must see for one subject before it leases quota for it. Default 100. */
  threshold?: number;
  /**
   * Most units drawn per lease (each lease is one store call). Capped at the share. Default a
   * tenth of the share: `max(1, floor(smallest limit / instances / 10))`, so the worst case of the
   * algorithms without a window edge (instances x leaseSize) is a tenth of the limit.
   */
  leaseSize?: number;
  /**
   * Longest a lease is served, in ms or as a duration string. A lease also ends at its window's
   * edge for fixed-window and sliding-window-counter. Default 1000.
   */
  leaseMs?: Duration;
  /** Subjects tracked at once (least recently used dropped, with their unused lease). Default 10_000. */
  maxSubjects?: number;
  /** Monotonic clock in ms for rates and lease expiry (decisions keep the store's clock). Default performance.now. */
  clock?: () => number;
}

export interface HotKeyStoreOptions extends HotKeyOptions {
  /** The shared store the leases are drawn from. */
  store: Store;
}

/** Hot-key options after parsing: every field set but `leaseSize` (sized from the limits when unset). */
export interface ResolvedHotKeyOptions {
  readonly instances: number;
  readonly threshold: number;
  readonly leaseSize: number | undefined;
  readonly leaseMs: number;
  readonly maxSubjects: number;
  readonly clock: () => number;
}

const HOT_KEY_OPTION_NAMES = optionNames<HotKeyOptions>()(['instances', 'threshold', 'leaseSize', 'leaseMs', 'maxSubjects', 'clock']);
const HOT_KEY_STORE_OPTION_NAMES = optionNames<HotKeyStoreOptions>()([...(HOT_KEY_OPTION_NAMES as readonly (keyof HotKeyOptions)[]), 'store']);

/**
 * Parses hot-key options once: a limiter's `hotKeys` at its construction (`where` 'hotKeys', its
 * fields named `hotKeys.threshold`, ...; `defaults` the limiter's clock and instances), or a
 * HotKeyStore's own (`where` 'HotKeyStore'). Names are checked by the caller.
 */
export function resolveHotKeyOptions(
  options: HotKeyOptions,
  where: 'hotKeys' | 'HotKeyStore',
  defaults: { clock?: () => number; instances?: number } = {},
): ResolvedHotKeyOptions {
  const o = (name: string) => (where === 'hotKeys' ? `hotKeys.${name}` : name);
  return {
    instances: wholeNumber(o('instances'), options.instances ?? defaults.instances ?? 1, 1, MAX_INSTANCES),
    threshold: wholeNumber(o('threshold'), options.threshold ?? 100, 1, MAX_UNITS),
    leaseSize: options.leaseSize === undefined ? undefined : wholeNumber(o('leaseSize'), options.leaseSize, 1, MAX_UNITS),
    leaseMs: parseDuration(o('leaseMs'), options.leaseMs ?? 1000, 1, 3_600_000),
    maxSubjects: wholeNumber(o('maxSubjects'), options.maxSubjects ?? 10_000, 1, 10_000_000),
    clock: clockOption(o('clock'), options.clock) ?? defaults.clock ?? (() => performance.now()),
  };
}

/** A limiter's `hotKeys` option, parsed with its other options: undefined when hot-key mode is off. */
export function resolveLimiterHotKeys(value: unknown, defaults: { clock?: () => number; instances?: number }): ResolvedHotKeyOptions | undefined {
  if (value === undefined) return undefined;
  const options = optionsObject<HotKeyOptions>('hotKeys', value as HotKeyOptions, 'an object such as { instances: 4 }');
  checkOptionNames('hotKeys', options, HOT_KEY_OPTION_NAMES);
  return resolveHotKeyOptions(options, 'hotKeys', defaults);
}

/** What the wrapper did, for logs, metrics and tests: the counts metrics.ts reads. Counters only grow. */
export type HotKeyStats = HotKeyCounts;

/** A lease the store denied: its figures (for `size` units), when, and how long until `size` fits. */
interface DeniedLease {
  /** The store's clock when it denied. */
  storeAt: number;
  results: readonly LimitResult[];
  size: number;
  at: number;
  untilMs: number;
}

interface Subject {
  limits: readonly StoreLimit[];
  /** Whole second (of the clock) that `count` belongs to, and the count in the second before. */
  second: number;
  count: number;
  previous: number;
  /** Leased units not yet handed out, valid until `expiresAt`. */
  units: number;
  expiresAt: number;
  leasedAt: number;
  /** The store's clock when it charged the lease (StoreResult.at): every unit served from it was charged then. */
  storeAt: number;
  /** The store's figures just after the lease was charged. */
  figures: readonly LimitResult[] | undefined;
  /** The store's answer to the last lease that did not fit, until a whole lease fits again. */
  miss: DeniedLease | undefined;
  /**
   * The lease draw in flight, if any: concurrent requests wait for it instead of drawing their own.
   * It rejects when the draw failed, and its waiters fail with it: one failed draw is one store
   * failure, and its waiters get the failure mode's answer, never a draw (and a timeout) each.
   */
  drawing: Promise<void> | undefined;
}

function sameLimits(a: readonly StoreLimit[], b: readonly StoreLimit[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  return a.every((l, i) => l.algorithm === b[i].algorithm && l.capacity === b[i].capacity && periodOf(l) === periodOf(b[i]));
}

export class HotKeyStore implements Store {
  readonly name: string;
  readonly store: Store;
  readonly instances: number;
  readonly threshold: number;
  readonly leaseSize: number | undefined;
  readonly leaseMs: number;
  readonly stats: HotKeyStats = { local: 0, leases: 0, deniedLeases: 0, localDenials: 0, passThrough: 0 };
  private readonly clock: () => number;
  /** The inner store's deadline (ms): no request waits longer, whatever it waits for. Undefined: it never waits (memory). */
  private readonly budgetMs: number | undefined;
  private readonly subjects: LRUCache<string, Subject>;

  /**
   * `options` as given (checked and parsed here), or a store and hot-key options already parsed
   * (a limiter's `hotKeys`, parsed with its other options: see withHotKeys).
   */
  constructor(options: HotKeyStoreOptions);
  constructor(store: Store, parsed: ResolvedHotKeyOptions);
  constructor(options: HotKeyStoreOptions | Store, parsed?: ResolvedHotKeyOptions) {
    let store: Store;
    if (parsed === undefined) {
      if (!options || typeof options !== 'object' || Array.isArray(options)) invalidOption('HotKeyStore', options, 'an options object { store, instances }');
      const given = options as HotKeyStoreOptions;
      checkOptionNames('HotKeyStore options', given, HOT_KEY_STORE_OPTION_NAMES);
      store = storeOption('store', given.store);
      parsed = resolveHotKeyOptions(given, 'HotKeyStore');
    } else {
      store = options as Store;
    }
    this.store = store;
    this.name = `hot-keys:${store.name}`;
    this.instances = parsed.instances;
    this.threshold = parsed.threshold;
    this.leaseSize = parsed.leaseSize;
    this.leaseMs = parsed.leaseMs;
    this.clock = parsed.clock;
    this.subjects = new LRUCache<string, Subject>({ max: parsed.maxSubjects });
    this.budgetMs = store.timeoutMs || undefined;
  }

  async evaluate(request: StoreRequest): Promise<StoreResult> {
    if (request.keys.length === 0) return this.store.evaluate(request);
    const key = request.keys.join('\n');
    let s = this.subjects.get(key);
    if (s === undefined || !sameLimits(s.limits, request.limits)) {
      s = {
        limits: request.limits,
        second: 0,
        count: 0,
        previous: 0,
        units: 0,
        expiresAt: -Infinity,
        leasedAt: 0,
        storeAt: 0,
        figures: undefined,
        miss: undefined,
        drawing: undefined,
      };
      this.subjects.set(key, s);
    }
    const cost = request.cost;
    // A refund gives units back to the shared store, where every unit it names was charged (a
    // unit served from a lease was charged when the lease was, at the lease's `at`).
    // A settle likewise: its refund part gives back what the reservation charged, its debit is charged there.
    if (request.mode === 'refund' || request.mode === 'settle') return this.passThrough(request);
    // Shaping reserves a slot in the shared store: a lease's local units could not queue behind it.
    if (request.mode === 'hold') return this.passThrough(request);
    // Lock-out strikes are counted by the store on each refused consume: a lease would hide them.
    if (request.lockout) return this.passThrough(request);
    if (request.mode === 'peek') return this.serve(s, cost, false) ?? this.passThrough(request);

    const hot = this.touch(s);
    const deadlineAt = this.budgetMs === undefined ? undefined : this.clock() + this.budgetMs;
    for (;;) {
      const local = this.serve(s, cost, true);
      if (local) return local;
      this.checkDeadline(deadlineAt);
      // One draw per subject at a time: the others wait and are then served from it (or fail with it).
      if (s.drawing) {
        await this.within(s.drawing, deadlineAt);
        continue;
      }
      if (!hot || cost === 0) return this.within(this.passThrough(request), deadlineAt);
      if (s.miss && this.stillDenied(s.miss, cost)) {
        this.stats.localDenials++;
        return this.denial(s.miss, cost);
      }
      const size = this.leaseSizeFor(request);
      if (size <= cost) return this.within(this.passThrough(request), deadlineAt);
      const first = await this.within(this.draw(s, request, size), deadlineAt);
      if (!('untilMs' in first)) return first;
      // The whole lease did not fit. Deny until it does (Retry-After says when) if that is within
      // leaseMs; if it is further off (e.g. a long fixed window's last units), lease what is left
      // when this request fits in it, rather than strand those units for so long.
      if (this.denies(first, cost)) return this.denial(first, cost);
      this.checkDeadline(deadlineAt);
      const rest = await this.within(this.draw(s, request, smallestRemaining(first.results)), deadlineAt);
      return 'untilMs' in rest ? this.denial(rest, cost) : rest;
    }
  }

  onReady(listener: () => void): void {
    this.store.onReady?.(listener);
  }

  async reset(keys: readonly string[]): Promise<void> {
    // Only this instance's lease is dropped; other instances' leases run out or expire (see docs).
    this.subjects.delete(keys.join('\n'));
    await this.store.reset(keys);
  }

  /** Counts this request in its second; true when the subject is hot now. */
  private touch(s: Subject): boolean {
    const second = Math.floor(this.clock() / 1000);
    if (second !== s.second) {
      s.previous = second === s.second + 1 ? s.count : 0;
      s.count = 0;
      s.second = second;
    }
    s.count++;
    return s.count >= this.threshold || s.previous >= this.threshold;
  }

  /** Admits `cost` from the live lease (taking it unless peeking), or undefined when the lease cannot. */
  private serve(s: Subject, cost: number, take: boolean): StoreResult | undefined {
    const figures = s.figures;
    if (figures === undefined || s.units < cost) return undefined;
    const now = this.clock();
    if (now >= s.expiresAt) {
      // Expired units stay charged in the store: they are under-admission, never over-admission.
      s.units = 0;
      s.figures = undefined;
      return undefined;
    }
    const left = s.units - cost;
    if (take) {
      s.units = left;
      this.stats.local++;
    }
    const elapsed = now - s.leasedAt;
    return {
      at: s.storeAt,
      allowed: true,
      results: figures.map((r) => ({
        allowed: true,
        // What the store had left after the lease, plus what this instance still holds.
        remaining: r.remaining + left,
        resetMs: Math.max(0, Math.ceil(r.resetMs - elapsed)),
        retryAfterMs: 0,
      })),
    };
  }

  /** A lease: at most the share (limit / instances) of the smallest limit, and at least the cost. */
  private leaseSizeFor(request: StoreRequest): number {
    let smallest = Infinity;
    for (const l of request.limits) smallest = Math.min(smallest, l.capacity);
    const share = Math.max(1, Math.floor(smallest / this.instances));
    return Math.max(request.cost, Math.min(this.leaseSize ?? Math.max(1, Math.floor(share / 10)), share));
  }

  private passThrough(request: StoreRequest): Promise<StoreResult> {
    this.stats.passThrough++;
    return this.store.evaluate(request);
  }

  /** Draws a lease of `size`: resolves with this request's answer from it, or with the miss. */
  private async draw(s: Subject, request: StoreRequest, size: number): Promise<StoreResult | DeniedLease> {
    const sentAt = this.clock();
    let outcome: StoreResult | DeniedLease | undefined;
    const drawing = this.store.evaluate({ keys: request.keys, limits: request.limits, cost: size, mode: 'consume' }).then(
      (result) => {
        if (!result.allowed) {
          this.stats.deniedLeases++;
          let untilMs = 0;
          for (const r of result.results) if (!r.allowed) untilMs = r.retryAfterMs < 0 ? -1 : Math.max(untilMs, r.retryAfterMs);
          s.miss = outcome = { storeAt: result.at, results: result.results, size, at: this.clock(), untilMs };
          return;
        }
        this.stats.leases++;
        s.miss = undefined;
        // Taken here, synchronously, so that no waiter is served before the request that drew it.
        s.units = size - request.cost;
        s.leasedAt = sentAt;
        s.storeAt = result.at;
        // Measured from the send time, which is no later than the script's clock read: the lease
        // ends no later than the window it was charged to.
        s.expiresAt = sentAt + this.lifetime(request.limits, result.results, result.at);
        s.figures = result.results;
        outcome = {
          at: result.at,
          allowed: true,
          results: result.results.map((r) => ({ ...r, remaining: r.remaining + s.units })),
        };
      },
    );
    const shared = (s.drawing = drawing.then(() => undefined));
    // Waiters see the failure; with none, it is not an unhandled rejection.
    shared.catch(() => undefined);
    try {
      await drawing;
    } finally {
      s.drawing = undefined;
    }
    return outcome!;
  }

  /**
   * What `work` settles with, or FG_STORE_TIMEOUT once the request's deadline passes: a request that
   * waited for other draws never waits a whole store timeout more for its own. An abandoned draw
   * still completes, and its lease serves the requests after it.
   */
  private within<T>(work: Promise<T>, deadlineAt: number | undefined): Promise<T> {
    return deadlineAt === undefined ? work : withDeadline(work, Math.max(0, deadlineAt - this.clock()), 'Hot-key lease draw');
  }

  /** Throws FG_STORE_TIMEOUT when the request's deadline has passed: it starts no draw and waits for none. */
  private checkDeadline(deadlineAt: number | undefined): void {
    if (deadlineAt !== undefined && this.clock() >= deadlineAt) {
      throw new FloodgateError('FG_STORE_TIMEOUT', `Hot-key mode: no lease within the store's ${this.budgetMs} ms.`);
    }
  }

  /** Whether a missed lease means no for this cost: it did not fit either, or a whole lease fits within leaseMs. */
  private denies(miss: DeniedLease, cost: number): boolean {
    return smallestRemaining(miss.results) < cost || (miss.untilMs >= 0 && miss.untilMs <= this.leaseMs);
  }

  /** True while a missed lease still says no to this cost (until a whole lease fits). */
  private stillDenied(miss: DeniedLease, cost: number): boolean {
    return miss.untilMs >= 0 && this.clock() - miss.at < miss.untilMs && this.denies(miss, cost);
  }

  /** A missed lease's answer as this request's denial, its times counted from the miss. */
  private denial(miss: DeniedLease, cost: number): StoreResult {
    const elapsed = this.clock() - miss.at;
    return {
      at: miss.storeAt,
      allowed: false,
      results: miss.results.map((r) => ({
        allowed: r.allowed,
        // A limit that admitted the lease reported what would be left after it; the limiter adds
        // this request's cost back for such limits, so report what is left after `cost` instead.
        remaining: r.allowed ? r.remaining + miss.size - cost : r.remaining,
        resetMs: Math.max(0, Math.ceil(r.resetMs - elapsed)),
        retryAfterMs: r.allowed ? 0 : r.retryAfterMs < 0 ? -1 : Math.max(1, Math.ceil(r.retryAfterMs - elapsed)),
      })),
    };
  }

  /** How long a lease may be served: leaseMs, and never past the edge of the window it was charged to. */
  private lifetime(limits: readonly StoreLimit[], results: readonly LimitResult[], at: number): number {
    let ms = this.leaseMs;
    limits.forEach((limit, i) => {
      const edge = ALGORITHM[limit.algorithm].leaseEdgeMs;
      if (edge) ms = Math.min(ms, edge(results[i], limit, at));
    });
    return ms;
  }
}

function smallestRemaining(results: readonly LimitResult[]): number {
  let smallest = Infinity;
  for (const r of results) smallest = Math.min(smallest, r.remaining);
  return smallest;
}

/** createLimiter's hook: the store wrapped for hot-key mode (options parsed at construction), or the store itself when it is off. */
export function withHotKeys(store: Store, options: ResolvedHotKeyOptions | undefined): Store {
  return options === undefined ? store : new HotKeyStore(store, options);
}
