// createLimiter: the framework-free engine. Cheapest check first: block cache, then one atomic store call.
import { isThenable } from '../base/maybe-promise';
import { BlockCache } from './block-cache';
import { lockedDecision, toDecision, type Decision, type LimitDecision } from '../model/decision';
import { linkStore, type StoreLink } from './store-link';
import { newLeaseToken } from '../model/concurrency';
import { LeaseBook, type LeaseSite } from './lease-book';
import { subjectKey } from '../base/keys';
import { NestedMemo } from '../base/memo';
import { resolveLimiterOptions, type CreateLimiterOptions, type ResolvedLimiterOptions } from './options';
import type { ResolvedLimit } from '../model/limit';
import type { StoreLockout, StoreOverride, StoreRequest, StoreResult } from '../stores/store';
import { ALL_SCOPES, broadFor, broadSet, type BroadEntry } from './broad-overrides';
import { audit, overrideCall, overrideOf, overrideStore, type OverrideLimits, type OverrideOptions, type OverrideRecord } from './overrides';
import { isCost, leaseToken, MAX_LEASE_COST, refundAt, requestCost } from '../base/validate';
import { FloodgateError } from '../base/errors';
import { healthOf, type Health, type HealthOptions, type HealthSource } from '../observe/health';
import { DecisionTally, metricsFor } from '../observe/metrics';
import { warnOnce } from '../base/warnings';
import { newSettleToken, type Reservation, type SettleResult } from '../model/settle';
import { usageOf, type Usage } from '../model/usage';
import { bareDecision } from '../model/decision';
import { LimitValues } from './limit-values';
import { LimitFunctionError, reportBadAnswer, type LimitSet } from './dynamic-limits';

export type { CreateLimiterOptions } from './options';

// One clock function for every limiter that does not bring its own, so limiters on one store share one breaker.
const monotonic = () => performance.now();
// Subjects whose keys one limiter keeps built, per generation (base/memo.ts: at most twice this; a
// miss only rebuilds them), and the longest subject plus scope remembered (longer ones are rare and
// would hold memory).
const KEYS_MAX = 10_000;
const KEYS_MAX_INPUT = 512;

/** One subject's keys in one scope: the digest-named base, one key per limit, the lock-out's key. */
interface SubjectKeys {
  readonly base: string;
  readonly keys: readonly string[];
  readonly lock: StoreLockout | undefined;
  /** The subject's override (same hash tag), when the limiter reads overrides. */
  readonly override: StoreOverride | undefined;
}
export interface ConsumeOptions {
  /** Units this request draws; a whole number from 0. Default 1. */
  cost?: number;
  /** The bucket's scope, e.g. the route pattern; separate scopes are separate buckets. Default ''. */
  scope?: string;
  /**
   * Shaping (docs/shaping.md): a request over a rate limit (gcra, token-bucket) that would conform
   * within this many ms is admitted for that future slot, reserved in the same atomic step, instead
   * of refused: the decision's `delayMs` says how long to hold it. A whole number of ms; default 0
   * (never held). Not with `concurrency`. Window limits never hold (they refuse as without it).
   */
  maxDelayMs?: number;
}

export interface RefundOptions extends ConsumeOptions {
  /** The `at` of the admitted decision being refunded (`Decision.at`): the store-clock ms it was charged at. Required. */
  at: number;
}

export interface SettleCallOptions {
  /** The reservation's scope (as it was consumed). Default ''. */
  scope?: string;
  /** The reservation's `at` (its `Decision.at`). Required. */
  at: number;
  /** The cost the reservation drew (the estimate). Required. */
  reserved: number;
  /** The actual cost, a whole number from 0; charged at most `settle.maxCost`. Required. */
  actual: number;
  /** The reservation's settle token: one per reservation, `[A-Za-z][A-Za-z0-9_-]{0,63}`; a second settle with it changes nothing. Required. */
  token: string;
}

export interface Limiter {
  /** Draws `cost` units for this subject, all-or-nothing over every limit. Resolves; never rejects for a limit. */
  consume(subject: string, options?: ConsumeOptions): Promise<Decision>;
  /**
   * Gives back the `cost` units (default 1) that the consume decided at `at` (its `Decision.at`)
   * drew, to every limit, as if it had not happened: never below zero, never past a full limit;
   * a charge whose window has passed is no longer counted and is not given back. Use it to count
   * only some outcomes (charge first, refund the ones that should not count: exact under concurrency).
   * Resolves true when the store applied it, false when the store failed or its circuit breaker
   * skipped it (the units stay charged); never rejects for a store failure. Rejects with
   * FG_INVALID_COST or FG_INVALID_AT for a bad `cost` or `at`.
   */
  refund(subject: string, options: RefundOptions): Promise<boolean>;
  /** What a request of `cost` (default 1) would get now, without drawing anything. */
  peek(subject: string, options?: ConsumeOptions): Promise<Decision>;
  /**
   * A consume of the estimated `cost` that can be settled later with the actual cost
   * (`reservation.settle(actual)`, see Reservation and docs/quotas.md#reserve-then-settle); an
   * unsettled reservation stays charged. Resolves like `consume`.
   */
  reserve(subject: string, options?: ConsumeOptions): Promise<Reservation>;
  /**
   * Settles a reservation by its parts (what `reservation.settle` does): for a caller that keeps a
   * reservation's `at` and `token` elsewhere (a queue, another process).
   */
  settle(subject: string, options: SettleCallOptions): Promise<SettleResult>;
  /**
   * This subject's use of every limit in this scope, read without consuming (a cost-0 peek):
   * policies, used, remaining, resets at. Rejects when the store fails (there is no usage to make up).
   */
  usage(subject: string, options?: Pick<ConsumeOptions, 'scope'>): Promise<Usage>;
  /** Forgets this subject's counts in this scope (and its local ones, for failMode 'local'). Rejects if the store fails. */
  reset(subject: string, options?: Pick<ConsumeOptions, 'scope'>): Promise<void>;
  /**
   * What `consume` would answer from the block cache alone: the 'blocked' decision when this subject
   * is denied this cost until a time not yet reached, else undefined. Synchronous, no store call:
   * lets a caller skip costlier work (an API-key lookup) for a caller it will deny anyway.
   */
  blocked(subject: string, options?: ConsumeOptions): Decision | undefined;
  /**
   * A snapshot for a health route: the store's circuit breaker state, its last error and when, and
   * counts (decisions by outcome, store calls and errors, block-cache and hot-key figures).
   * `healthy` is false while the breaker is not closed. The store's raw error message and warnings
   * only with `{ detail: true }`, for a private endpoint. See docs/operations.md.
   */
  health(options?: HealthOptions): Health;
  /**
   * Sets this subject's limits (in `scope`) to `limits` for `ttlMs`, on every instance: the override
   * is stored under the subject's own hash tag and read by each decision's store call (one GET more,
   * no round trip), so the next decision anywhere applies it; it expires by itself. A number sets
   * every rate limit; `{ policy: n }` sets some. 0 refuses until it expires. Capped by
   * `limitCeiling`. Needs `overrides: true` (else FG_OVERRIDES_OFF). Rejects when the store fails.
   */
  override(subject: string, limits: OverrideLimits, options: OverrideOptions): Promise<OverrideRecord>;
  /** Removes this subject's override in `scope` (the next decision, on every instance, has the configured limits). */
  clearOverride(subject: string, options?: Pick<OverrideOptions, 'scope' | 'label'>): Promise<void>;
  /** The overrides set on this store and prefix that have not expired: each subject's (the index; decisions never read it), then the broad ones. */
  overrides(): Promise<OverrideRecord[]>;
  /**
   * A broad override: every caller of `scope` (a route's scope), or of everything this limiter
   * counts (`scope` left out), gets `limits` for `ttlMs`. Sent as the script's arguments: each
   * instance applies it within `overrides.pollMs` (default 1 s) plus one read; this one at once. A
   * subject's own override wins over it. Values from 1 (0 is for subjects), capped by `limitCeiling`.
   */
  overrideAll(limits: OverrideLimits, options: Omit<OverrideOptions, 'label'>): Promise<OverrideRecord>;
  /** Removes the broad override of `scope` (or of everything). */
  clearOverrideAll(options?: Pick<OverrideOptions, 'scope'>): Promise<void>;
  readonly options: ResolvedLimiterOptions;
}

/** What Floodgate's own layers see of a limiter: its health source, and a block-cache probe that counts no decision. */
export interface EngineLimiter extends Limiter {
  readonly healthSource: HealthSource;
  /**
   * `consume`, answered synchronously when nothing had to wait (a store that decides synchronously,
   * such as MemoryStore, or the block cache): the HTTP layer then serves the request in the same
   * turn, without a promise. Throws (synchronously) FG_INVALID_COST for a bad cost.
   */
  consumeNow(subject: string, options?: ConsumeOptions): Decision | Promise<Decision>;
  /**
   * Whether `blocked` would answer, without counting a decision (the identity layer's look-ahead).
   * `withinMs`: only a block that ends within this many ms counts (a longer one answers false).
   */
  isBlocked(subject: string, options: { cost: number; scope: string; withinMs?: number }): boolean;
  /** Distinct limit-function answers this limiter keeps resolved (at most `limitValuesMax`); 0 without limit functions. */
  readonly limitValuesHeld: number;
}

export function createLimiter(options: CreateLimiterOptions = {}): Limiter {
  return limiterFrom(resolveLimiterOptions(options));
}

/** Builds a limiter from options already parsed (the HTTP layer parses once and builds many). */
export function limiterFrom(resolved: ResolvedLimiterOptions): EngineLimiter {
  const engine = new Engine(resolved);
  const maxCost = engine.maxCost;
  return {
    options: resolved,
    consume: (subject, opts = {}) => engine.promised(subject, opts, 'consume'),
    consumeNow: (subject, opts = {}) => engine.decide(subject, opts, 'consume'),
    peek: (subject, opts = {}) => engine.promised(subject, opts, 'peek'),
    blocked(subject, opts = {}) {
      const cost = opts.cost ?? 1;
      // Mirrors decide(): a bad cost or one above every limit never reads the block cache. Nobody
      // blocked (every admitting request's case): no key is named to ask.
      if (!engine.blocks || engine.blocks.empty || !isCost(cost) || cost > maxCost) return undefined;
      const scope = opts.scope ?? '';
      // The subject's keys memo (two Map reads), as decide() names it: no digest-memo walk per 429.
      const hit = engine.fromBlock(engine.keysOf(subject, scope).base, cost);
      return hit && engine.counted(hit, scope);
    },
    isBlocked(subject, { cost, scope, withinMs }) {
      if (!engine.blocks || engine.blocks.empty || !isCost(cost) || cost > maxCost) return false;
      const hit = engine.blocks.get(engine.keysOf(subject, scope).base, cost);
      return hit !== undefined && (withinMs === undefined || hit.leftMs <= withinMs);
    },
    healthSource: engine.healthSource,
    get limitValuesHeld() {
      return engine.values?.size ?? 0;
    },
    health: (options) => healthOf([engine.healthSource], undefined, options),
    async refund(subject, opts = {} as RefundOptions) {
      const cost = opts.cost === undefined ? 1 : requestCost(opts.cost, 'got');
      const at = refundAt(opts.at);
      const { base, keys } = engine.keysOf(subject, opts.scope ?? '');
      // Room may have come back: the next consume asks the store.
      engine.blocks?.delete(base);
      // Through the breaker and the deadline like every call; a failure keeps the unit charged (the safe side).
      try {
        await engine.link.evaluate({ keys, limits: engine.storeLimits, cost, mode: 'refund', at });
      } catch {
        return false;
      }
      return true;
    },
    async reserve(subject, opts = {}) {
      const decision = await engine.promised(subject, opts, 'consume');
      const reserved = opts.cost ?? 1;
      const scope = opts.scope ?? '';
      // Only a charge the shared store made can be settled there.
      const at = decision.allowed ? decision.at : undefined;
      const token = at === undefined ? '' : newSettleToken();
      return {
        decision,
        settle: (actual: number) => (at === undefined ? engine.notReserved(actual) : engine.settle(subject, { scope, at, reserved, actual, token })),
      };
    },
    settle: (subject, opts) => engine.settle(subject, opts),
    async usage(subject, opts = {}) {
      const scope = opts.scope ?? '';
      const { keys } = engine.keysOf(subject, scope);
      const result = await engine.link.evaluate({ keys, limits: engine.storeLimits, cost: 0, mode: 'peek' });
      return usageOf(scope, result.at, toDecision(engine.limits, true, result.results, 0).limits);
    },
    ...overrideApi(engine, resolved),
    async reset(subject, opts = {}) {
      const { base, keys, lock } = engine.keysOf(subject, opts.scope ?? '');
      engine.blocks?.delete(base);
      await engine.link.reset(lock ? [...keys, lock.key] : keys);
    },
  };
}

/** The limiter's override methods (docs/runtime-limits.md#overrides): a subject's, read in the decision's script; broad ones, polled. */
function overrideApi(engine: Engine, resolved: ResolvedLimiterOptions): Pick<Limiter, 'override' | 'clearOverride' | 'overrides' | 'overrideAll' | 'clearOverrideAll'> {
  const { prefix } = resolved;
  return {
    async override(subject, limits, opts) {
      const store = overrideStore(resolved.overrides, resolved.store);
      const { base, override } = engine.keysOf(subject, opts?.scope ?? '');
      const call = overrideCall(opts, base);
      const { value, set } = overrideOf(resolved.limits, limits, resolved.limitCeiling);
      const record: OverrideRecord = { target: call.target, scope: call.scope, limits: set, ttlMs: call.ttlMs, ...(call.reason !== undefined ? { reason: call.reason } : {}), setAt: Date.now() };
      await store.putOverride(override!.key, value, call.ttlMs, { key: `${prefix}:overrides`, field: base, record: JSON.stringify(record) });
      // This instance's block may predate a raise: the next consume asks the store.
      engine.blocks?.delete(base);
      engine.overrideCounted('set');
      audit(resolved.onOverride, { action: 'set', target: call.target, scope: call.scope, record }, resolved.failure.logger);
      return record;
    },
    async clearOverride(subject, opts = {}) {
      const store = overrideStore(resolved.overrides, resolved.store);
      const scope = opts.scope ?? '';
      const { base, override } = engine.keysOf(subject, scope);
      await store.dropOverride(override!.key, { key: `${prefix}:overrides`, field: base });
      engine.blocks?.delete(base);
      engine.overrideCounted('clear');
      audit(resolved.onOverride, { action: 'clear', target: opts.label ?? base, scope }, resolved.failure.logger);
    },
    async overrides() {
      const store = overrideStore(resolved.overrides, resolved.store);
      const subjects = (await store.listOverrides(`${prefix}:overrides`)).map((r) => JSON.parse(r) as OverrideRecord);
      const broad = store.readBroad ? await store.readBroad(`${prefix}:broad`) : { now: 0, fields: {} };
      const wide: OverrideRecord[] = [];
      for (const text of Object.values(broad.fields) as string[]) {
        const r = JSON.parse(text) as OverrideRecord & { until: number };
        if (r.until > broad.now) wide.push({ target: r.target, scope: r.scope, limits: r.limits, ttlMs: r.ttlMs, ...(r.reason !== undefined ? { reason: r.reason } : {}), setAt: r.setAt });
      }
      return [...subjects, ...wide];
    },
    async overrideAll(limits, opts) {
      const store = overrideStore(resolved.overrides, resolved.store);
      const scope = opts?.scope ?? ALL_SCOPES;
      const call = overrideCall({ ...opts, scope }, scope === ALL_SCOPES ? 'all' : `route ${scope}`);
      const { set } = overrideOf(resolved.limits, limits, resolved.limitCeiling);
      for (const [name, v] of Object.entries(set)) if (v < 1) throw new FloodgateError('FG_INVALID_OPTION', `Invalid option \`overrideAll limits.${name}\`: got 0; expected a whole number from 1 (0 refuses a subject: limiter.override).`, 'overrideAll');
      const record: OverrideRecord = { target: call.target, scope, limits: set, ttlMs: call.ttlMs, ...(call.reason !== undefined ? { reason: call.reason } : {}), setAt: Date.now() };
      if (!store.putBroad) throw new FloodgateError('FG_OVERRIDES_OFF', `The store '${resolved.store.name}' keeps no broad overrides (putBroad).`, 'overrides');
      await store.putBroad(`${prefix}:broad`, scope, { ...record }, call.ttlMs);
      await engine.broad?.poll();
      engine.overrideCounted('set');
      audit(resolved.onOverride, { action: 'set', target: call.target, scope, record }, resolved.failure.logger);
      return record;
    },
    async clearOverrideAll(opts = {}) {
      const store = overrideStore(resolved.overrides, resolved.store);
      const scope = opts.scope ?? ALL_SCOPES;
      await store.dropBroad?.(`${prefix}:broad`, scope);
      await engine.broad?.poll();
      engine.overrideCounted('clear');
      audit(resolved.onOverride, { action: 'clear', target: scope === ALL_SCOPES ? 'all' : `route ${scope}`, scope }, resolved.failure.logger);
    },
  };
}

/** A blocked decision's time `ms` (a reset or retry), `elapsed` ms later: counted down, never below 0; -1 and 0 stay. */
function aged(ms: number, elapsed: number): number {
  return ms > 0 ? Math.max(0, Math.ceil(ms - elapsed)) : ms;
}

/** One limiter's state and steps: its keys, its block cache, its counts and its link to the store. */
class Engine {
  /** The rate limits, then the in-flight limit when there is one (decided with them in one atomic call). */
  readonly limits: readonly ResolvedLimit[];
  readonly maxCost: number;
  /** The in-flight limit's leases held for requests still running; undefined without one. */
  private readonly leases: LeaseBook | undefined;
  readonly storeLimits: StoreRequest['limits'];
  readonly blocks: BlockCache<Decision> | undefined;
  readonly link: StoreLink;
  readonly tally: DecisionTally;
  readonly healthSource: HealthSource;
  // Each subject's keys, built once while it stays active (bounded), found by the strings the request already has.
  private readonly keysMemo = new NestedMemo<SubjectKeys>(KEYS_MAX);
  /** Limit functions (option values that are functions): called per request after the block cache; undefined when every limit is a number. */
  readonly values: LimitValues | undefined;
  private readonly meter: ReturnType<typeof metricsFor>;
  /** The broad overrides of this store and prefix (polled); undefined without `overrides`. */
  readonly broad: ReturnType<typeof broadFor> | undefined;
  private broadSeen = 0;
  /** The static limits as a set, for a broad override over them. */
  private readonly staticSet: LimitSet;
  /** Each set's last broad version (bounded: one per set). */
  private readonly broadened = new WeakMap<LimitSet, { entry: BroadEntry; set: LimitSet }>();
  /** The limits a request with a function's answer was sent with, for a late answer (held only while the request is). */
  private readonly sentWith = new WeakMap<StoreRequest, readonly ResolvedLimit[]>();

  constructor(private readonly resolved: ResolvedLimiterOptions) {
    const { concurrency } = resolved;
    this.limits = concurrency ? [...resolved.limits, concurrency] : resolved.limits;
    this.maxCost = concurrency ? Math.min(resolved.maxCost, concurrency.limit, MAX_LEASE_COST) : resolved.maxCost;
    this.storeLimits = this.limits.map((l) => l.store);
    const clock = resolved.clock ?? monotonic;
    // A lease held to maxHoldMs is a request that did not end (a hung handler, a response never finished): worth one line in the log.
    const capped = () =>
      void warnOnce(
        resolved.failure.logger,
        resolved.warnings,
        'FG_LEASE_MAX_HOLD',
        `a request held its in-flight slot (policy '${concurrency!.name}') for concurrency.maxHoldMs (${concurrency!.maxHoldMs} ms); its lease is no longer renewed and frees itself, though the request may still run. A hung handler, or a longer request than maxHoldMs allows (docs/concurrency.md)`,
      );
    this.leases = concurrency && new LeaseBook([concurrency.store], concurrency.windowMs, clock, concurrency.maxHoldMs, capped);
    this.values = resolved.dynamic ? new LimitValues(resolved) : undefined;
    this.broad = resolved.overrides && resolved.store.readBroad ? broadFor(resolved.store, resolved.prefix, resolved.overridesPollMs) : undefined;
    this.staticSet = { limits: this.limits, storeLimits: this.storeLimits, maxCost: this.maxCost, sameKeys: true };
    this.blocks = resolved.blockCacheSize > 0 ? new BlockCache<Decision>(resolved.blockCacheSize, clock) : undefined;
    // Metrics: counts live here as plain numbers, read by observable instruments when a reader collects.
    const meter = metricsFor(resolved.meterProvider);
    this.meter = meter;
    this.link = linkStore(resolved, this.limits, clock, meter, { late: (request, result) => this.lateAnswer(request, result) });
    const name = resolved.store.name;
    this.tally = new DecisionTally(name);
    meter.tallies.add(this.tally);
    const blocks = this.blocks;
    const blockStats = blocks && { store: name, get hits() { return blocks.hits; } };
    if (blockStats) meter.blockCaches.add(blockStats);
    const { monitor, hotKeys, scriptStats, fleet } = this.link;
    this.healthSource = { monitor, tally: this.tally, blockCache: blockStats, hotKeys, scriptStats, fleet, warnings: resolved.store.warnings };
  }

  keysOf(subject: string, scope: string): SubjectKeys {
    const hit = this.keysMemo.get(scope, subject);
    if (hit !== undefined) return hit;
    const { prefix, lockout } = this.resolved;
    const base = subjectKey(prefix, scope, String(subject));
    // The lock key shares the subject's {hash tag}: one script call reads and writes it with the limits.
    // The override key shares it too: the decision's script reads it in the same call.
    const override = this.resolved.overrides ? { key: `${base}:ovr`, ceiling: this.resolved.limitCeiling ?? 0 } : undefined;
    const entry: SubjectKeys = { base, keys: this.limits.map((l) => `${base}:${l.keySuffix}`), lock: lockout && { ...lockout, key: `${base}:lock` }, override };
    if (typeof subject === 'string' && subject.length + scope.length <= KEYS_MAX_INPUT) this.keysMemo.set(scope, subject, entry);
    return entry;
  }

  /** A settle of a reservation that charged nothing in the shared store (denied or degraded). */
  async notReserved(actual: number): Promise<SettleResult> {
    requestCost(actual, 'settle actual');
    return { settled: false, outcome: 'not-reserved', charged: 0, capped: false, limits: [] };
  }

  /** Settles a reservation on the rate limits (not the in-flight one), once per token, atomically in the store. */
  async settle(subject: string, opts: SettleCallOptions): Promise<SettleResult> {
    const { maxCost, withinMs } = this.resolved.settle;
    const actual = requestCost(opts.actual, 'settle actual');
    const reserved = requestCost(opts.reserved, 'settle reserved');
    const at = refundAt(opts.at);
    const token = leaseToken(opts.token);
    const charged = Math.min(actual, maxCost);
    const capped = actual > maxCost;
    const { base, keys } = this.keysOf(subject, opts.scope ?? '');
    const rate = this.resolved.limits;
    const request: StoreRequest = {
      keys: rate.length === keys.length ? keys : keys.slice(0, rate.length),
      limits: rate.length === this.storeLimits.length ? this.storeLimits : this.storeLimits.slice(0, rate.length),
      cost: reserved,
      mode: 'settle',
      at,
      token,
      settle: { key: `${base}:settle`, actual: charged, withinMs },
    };
    // A settle below the reservation gives room back: the next consume asks the store.
    this.blocks?.delete(base);
    let result: StoreResult;
    try {
      result = await this.link.evaluate(request);
    } catch {
      // The safe side, as a refund's: the reservation stays charged, and the same settle can be tried again.
      return { settled: false, outcome: 'store-failed', charged: reserved, capped, limits: [] };
    }
    const outcome = result.settled ?? 'expired';
    const limits = toDecision(rate, true, result.results, 0).limits;
    return { settled: outcome === 'settled', outcome, charged: outcome === 'settled' ? charged : outcome === 'expired' ? reserved : null, capped, limits };
  }

  /** The store's answer as a Decision: `at` only on a charged consume. */
  fromResult(request: StoreRequest, result: StoreResult, limits: readonly ResolvedLimit[] = this.limits): Decision {
    this.link.remember(request, result);
    const charged = (request.mode === 'consume' || request.mode === 'hold') && result.allowed && !result.lockedMs;
    const decision = toDecision(limits, result.allowed, result.results, request.cost, undefined, false, charged ? result.at : undefined, result.at);
    if (result.delayMs) return { ...decision, delayMs: result.delayMs };
    return result.lockedMs ? lockedDecision(decision, result.lockedMs) : decision;
  }

  /** The denial that set the block, aged to now: its reset and retry times count down, not freeze. */
  fromBlock(base: string, cost: number): Decision | undefined {
    // A broad override changed since the last look: blocks set under the old limits go.
    if (this.broad !== undefined && this.broad.version !== this.broadSeen) {
      this.broadSeen = this.broad.version;
      this.blocks?.clear();
    }
    const hit = this.blocks?.get(base, cost);
    if (!hit) return undefined;
    const d = hit.decision;
    const elapsed = Math.max(0, d.retryAfterMs - hit.leftMs);
    // A loop and a plain function rather than map() over a closure: every 429 from the cache runs it.
    // Literals of the fields a cached denial has (toDecision's and lockedDecision's; a denial carries
    // no `at`, lease or delay), not spreads: a spread copies through a generic clone.
    const limits: LimitDecision[] = new Array(d.limits.length);
    for (let i = 0; i < limits.length; i++) {
      const l = d.limits[i];
      const resetMs = aged(l.resetMs, elapsed);
      const retryAfterMs = aged(l.retryAfterMs, elapsed);
      limits[i] =
        l.quotaUnit === undefined
          ? { policy: l.policy, allowed: l.allowed, limit: l.limit, windowMs: l.windowMs, remaining: l.remaining, resetMs, retryAfterMs }
          : { policy: l.policy, allowed: l.allowed, limit: l.limit, windowMs: l.windowMs, remaining: l.remaining, resetMs, retryAfterMs, quotaUnit: l.quotaUnit };
    }
    return {
      allowed: d.allowed,
      // A lock-out stays named as one: its wait is the lock's, not the limits'.
      reason: d.reason === 'locked' ? 'locked' : 'blocked',
      degraded: d.degraded,
      limit: d.limit,
      remaining: d.remaining,
      resetMs: d.resetMs === null ? null : aged(d.resetMs, elapsed),
      retryAfterMs: Math.ceil(hit.leftMs),
      policy: d.policy,
      limits,
    };
  }

  /** Counts an override set or cleared (metrics: floodgate.overrides). */
  overrideCounted(action: 'set' | 'clear'): void {
    this.meter.overrides.add(1, { 'floodgate.store': this.resolved.store.name, 'floodgate.override.action': action });
  }

  /** Counts one decision a consume answered (peeks are not decisions). */
  counted(decision: Decision, scope: string): Decision {
    this.tally.count(scope, decision.reason, decision.policy, decision.degraded, decision.allowed);
    return decision;
  }

  /** Synchronous when nothing has to wait; throws FG_INVALID_COST for a bad cost. */
  decide(subject: string, opts: ConsumeOptions, mode: StoreRequest['mode']): Decision | Promise<Decision> {
    const cost = opts.cost === undefined ? 1 : requestCost(opts.cost, 'got');
    const scope = opts.scope ?? '';
    const { base, keys, lock, override } = this.keysOf(subject, scope);
    const consume = mode === 'consume';
    // A cost above the smallest limit can never be admitted: look, never draw (reason cost-exceeds-limit).
    if (cost > this.maxCost) mode = 'peek';
    if (mode === 'consume') {
      const hit = this.fromBlock(base, cost);
      if (hit) return this.counted(hit, scope);
    }
    const maxDelayMs = mode === 'consume' ? this.holdOf(opts.maxDelayMs) : 0;
    const values = this.values;
    const wide = this.broad?.get(scope);
    if (!values && !wide) return this.decideWith(this.limits, this.storeLimits, keys, lock, override, base, cost, scope, consume, mode, maxDelayMs);
    // Limit functions run after the block cache: a caller denied until T costs no call.
    let answer: LimitSet | Promise<LimitSet>;
    try {
      answer = values ? values.answer(subject, opts) : this.staticSet;
    } catch (error) {
      return this.badAnswer(error, scope, consume);
    }
    const go = (answered: LimitSet) => {
      const set = wide ? this.broadened_(answered, wide) : answered;
      const setKeys = set.sameKeys ? keys : set.limits.map((l) => `${base}:${l.keySuffix}`);
      return this.decideWith(set.limits, set.storeLimits, setKeys, lock, override, base, cost, scope, consume, cost > set.maxCost ? 'peek' : mode, maxDelayMs);
    };
    if (!isThenable(answer)) return go(answer);
    return answer.then(go, (error: unknown) => this.badAnswer(error, scope, consume));
  }

  /** A set under a broad override (built once per set and override). */
  private broadened_(set: LimitSet, entry: BroadEntry): LimitSet {
    const hit = this.broadened.get(set);
    if (hit && hit.entry === entry) return hit.set;
    const made = broadSet(set, entry, this.resolved.limitCeiling);
    this.broadened.set(set, { entry, set: made });
    return made;
  }

  /** A limit function's bad answer: refused (503, nothing counted), logged once per cause. A bug of ours is rethrown. */
  private badAnswer(error: unknown, scope: string, consume: boolean): Decision {
    if (!(error instanceof LimitFunctionError)) throw error;
    reportBadAnswer(this.resolved.failure.logger, this.resolved.warnings, error);
    const decision = bareDecision(false, 'fail-closed', 1000);
    return consume ? this.counted(decision, scope) : decision;
  }

  /** One request, decided with these limits and keys. */
  private decideWith(
    limits: readonly ResolvedLimit[],
    storeLimits: StoreRequest['limits'],
    keys: readonly string[],
    lock: StoreLockout | undefined,
    override: StoreOverride | undefined,
    base: string,
    cost: number,
    scope: string,
    consume: boolean,
    mode: StoreRequest['mode'],
    maxDelayMs: number,
  ): Decision | Promise<Decision> {
    const drew = mode === 'consume';
    // An acquire names its lease, so that it can be released (and renewed) later.
    const token = this.leases && drew ? newLeaseToken() : undefined;
    let plain: StoreRequest = lock ? { keys, limits: storeLimits, cost, mode, lockout: lock } : { keys, limits: storeLimits, cost, mode };
    if (maxDelayMs > 0 && drew) plain = { ...plain, mode: 'hold', maxDelayMs };
    const read = override === undefined ? plain : { ...plain, override };
    const request: StoreRequest = token === undefined ? read : { ...read, token };
    if (limits !== this.limits) this.sentWith.set(request, limits);
    if (token !== undefined) return this.leased(request, limits, base, cost, scope);
    const link = this.link;
    if (link.evaluateSync) {
      let decision: Decision;
      try {
        decision = this.fromResult(request, link.evaluateSync(request), limits);
      } catch (error) {
        decision = this.degraded(request, error, base, cost);
      }
      return this.tallied(decision, base, cost, scope, consume, drew, maxDelayMs);
    }
    // The store's answer (or the failure mode's) and what follows in the guard's own reaction: one promise hop per decision.
    return link.evaluateThen(
      request,
      (result) => this.tallied(this.fromResult(request, result, limits), base, cost, scope, consume, drew, maxDelayMs),
      (error: unknown) => this.tallied(this.degraded(request, error, base, cost), base, cost, scope, consume, drew, maxDelayMs),
    );
  }

  /**
   * The failure mode's answer, unless the store denied this subject meanwhile (an answer to another
   * of its requests, in time or late, while this one waited): then the block cache's, which is exact.
   */
  private degraded(request: StoreRequest, error: unknown, base: string, cost: number): Decision {
    // (Its call's late answer then goes unheard: it could only block a subject blocked already.)
    return (request.mode === 'consume' ? this.fromBlock(base, cost) : undefined) ?? this.link.degraded(request, error);
  }

  /** A consume's `maxDelayMs` (shaping): a whole number of ms from 0; FG_INVALID_OPTION otherwise, or with an in-flight limit. */
  private holdOf(ms: number | undefined): number {
    if (ms === undefined || ms === 0) return 0;
    if (!Number.isSafeInteger(ms) || ms < 0) throw new FloodgateError('FG_INVALID_OPTION', `Invalid maxDelayMs: ${String(ms)}; expected a whole number of ms from 0 (docs/shaping.md).`);
    if (this.leases) throw new FloodgateError('FG_INVALID_OPTION', `Invalid maxDelayMs: ${ms} with concurrency; a held request would hold its in-flight slot while it waits (docs/shaping.md).`);
    return ms;
  }

  /** A consume with an in-flight limit: an admitted decision carries its lease, held where it was decided. */
  private leased(request: StoreRequest, limits: readonly ResolvedLimit[], base: string, cost: number, scope: string): Decision | Promise<Decision> {
    const book = this.leases!;
    const link = this.link;
    const withLease = (decision: Decision, site: LeaseSite | undefined): Decision => {
      decision = this.tallied(decision, base, cost, scope, true, true);
      if (!decision.allowed || !site) return decision;
      return { ...decision, lease: book.hold([request.keys[request.keys.length - 1]], cost, request.token!, site) };
    };
    const degraded = (error: unknown): Decision => {
      const decision = this.degraded(request, error, base, cost);
      return withLease(decision, decision.reason === 'fail-local' ? link.localLeases : undefined);
    };
    if (link.evaluateSync) {
      let result: StoreResult;
      try {
        result = link.evaluateSync(request);
      } catch (error) {
        return degraded(error);
      }
      return withLease(this.fromResult(request, result, limits), link);
    }
    return link.evaluate(request).then((result) => withLease(this.fromResult(request, result, limits), link), degraded);
  }

  /** A denial the block cache may keep: the shared store's, and not the in-flight limit's (a slot frees when a request ends, not at a known time). */
  private blockable(decision: Decision): boolean {
    return !decision.allowed && !decision.degraded && decision.retryAfterMs > 0 && (!this.leases || decision.limits[decision.limits.length - 1]?.allowed !== false);
  }

  /**
   * The store decided a request after its deadline (its caller already has the failure mode's
   * answer): a denial still goes to the block cache, so a subject the store found over its limit
   * is denied locally until its reset.
   */
  private lateAnswer(request: StoreRequest, result: StoreResult): void {
    if (request.mode !== 'consume' || !this.blocks) return;
    const decision = this.fromResult(request, result, this.sentWith.get(request));
    if (!this.blockable(decision)) return;
    // A limit's key is `<base>:<suffix>`, and a suffix holds no ':'.
    const base = request.keys[0].slice(0, request.keys[0].lastIndexOf(':'));
    this.blocks.set(base, request.cost, decision.retryAfterMs, decision);
  }

  /** Counts a consume's decision and caches the shared store's denials. */
  private tallied(decision: Decision, base: string, cost: number, scope: string, consume: boolean, drew: boolean, hold = 0): Decision {
    if (consume) this.counted(decision, scope);
    // Only the shared store's denials are cached: a degraded one would outlive the outage.
    if (this.blocks && drew && this.blockable(decision)) {
      // Shaping: a request is refused only while its wait would pass maxDelayMs; past that it can be held.
      const blockMs = decision.retryAfterMs - hold;
      if (blockMs > 0) this.blocks.set(base, cost, blockMs, decision);
    }
    return decision;
  }

  /** decide() as a promise: a synchronous answer resolved, a synchronous throw rejected. */
  promised(subject: string, opts: ConsumeOptions, mode: StoreRequest['mode']): Promise<Decision> {
    try {
      const decision = this.decide(subject, opts, mode);
      return isThenable(decision) ? decision : Promise.resolve(decision);
    } catch (error) {
      return Promise.reject(error);
    }
  }
}
