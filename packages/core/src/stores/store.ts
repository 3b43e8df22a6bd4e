// The store contract: evaluate every limit of one subject atomically, all-or-nothing.
import type { StoreLimit } from '../algorithms/registry';
import type { LimitResult } from '../algorithms/types';
import { invalidOption } from '../base/errors';
import type { ResolvedLockout } from '../model/lockout';

/** Progressive lock-out for one subject: its lock key (same {hash tag} as the limits' keys) and its rules. */
export interface StoreLockout extends ResolvedLockout {
  readonly key: string;
}

/** A settle's own fields (mode `settle`): see StoreRequest.mode. */
export interface StoreSettle {
  /** The subject's settle record (same {hash tag} as the limits' keys): the tokens settled, each until its record expires. */
  readonly key: string;
  /** The actual cost: `cost` (what was reserved) is replaced by it. A whole number from 0. */
  readonly actual: number;
  /** A reservation can be settled until `at + withinMs`; its token is remembered as long. */
  readonly withinMs: number;
}

export interface StoreRequest {
  /** One key per limit; all keys of one subject share one {hash tag}. */
  readonly keys: readonly string[];
  readonly limits: readonly StoreLimit[];
  /** Units this request draws from every limit (`refund`: gives back); admitted only if all of them fit in all limits. */
  readonly cost: number;
  /**
   * `consume` draws `cost` from every limit, all-or-nothing; `peek` evaluates and never writes;
   * `refund` gives `cost` back to every limit as if the consume decided at `at` had not happened
   * (never below zero, never past a full limit; a missing key stays missing) and is always allowed.
   * `release` and `renew` (lease limits only, with `token`): give back the `cost` slots leased
   * under `token`, or run a lease still held for its length from now again; always allowed.
   * `settle` (rate limits only, with `at`, `token` and `settle`): replaces the `cost` a consume
   * decided at `at` reserved by `settle.actual`: less is refunded as `refund` does, more is charged
   * now whatever is left, past the limit if need be (debt: later consumes are denied until it is
   * paid back). Applied once per `token` (StoreResult.settled says whether it was).
   * `hold` (rate limits only, with `maxDelayMs`: shaping, docs/shaping.md) is a `consume` that,
   * where a rate limit denies, reserves the first future slot that admits the request when it is at
   * most `maxDelayMs` away (StoreResult.delayMs), in the same atomic step: later requests queue
   * behind it. A `refund` gives a held request's units back like any consume's.
   */
  readonly mode: 'consume' | 'peek' | 'refund' | 'release' | 'renew' | 'settle' | 'hold';
  /** `hold` only, and required there: the longest a request may wait for its slot, whole ms from 1. */
  readonly maxDelayMs?: number;
  /** `refund` and `settle`, and required there: the store-clock ms at which the refunded (settled) consume was decided (its StoreResult.at). */
  readonly at?: number;
  /**
   * The lease's id, when the limits hold leases (concurrency): required by `release` and `renew`,
   * and by a `consume` whose limits include a lease. `[A-Za-z0-9_-]`, starting with a letter.
   */
  readonly token?: string;
  /**
   * Progressive lock-out, read and written in the same atomic step as the limits: `consume` and
   * `peek` are denied while the subject is locked (nothing charged); a `consume` the limits deny is a
   * strike, and may lock it. `refund` ignores it. Absent: no lock-out.
   */
  readonly lockout?: StoreLockout;
  /** `settle` only, and required there. */
  readonly settle?: StoreSettle;
  /**
   * `consume` and `peek`: the subject's override, read in the same atomic step (lua/main.lua's
   * Override): each limit's result then carries the capacity in force (`LimitResult.limit`). Absent: none read.
   */
  readonly override?: StoreOverride;
}

/** Where a subject's override lives (same {hash tag} as its limits' keys) and the ceiling that caps it (0: none). */
export interface StoreOverride {
  readonly key: string;
  readonly ceiling: number;
}

export interface StoreResult {
  /** The store's clock in ms when it decided (Redis TIME, or the memory store's clock): a refund names a consume by it. */
  readonly at: number;
  /** True when every limit admitted (and, for `consume`, all were charged). Always true for `refund`. */
  readonly allowed: boolean;
  /** One result per limit, in request order. */
  readonly results: readonly LimitResult[];
  /** Set (ms left) when the request's lock-out denied it: the subject is locked out (possibly by this very request's strike). */
  readonly lockedMs?: number;
  /**
   * Set for `settle` only: 'settled' when it was applied now (then `allowed` is true),
   * 'already-settled' when its token was settled before, 'expired' when the reservation is
   * `withinMs` old or older (neither changes anything).
   */
  readonly settled?: SettleOutcome;
  /** Set for `hold` only, when the request was admitted for a slot ahead: ms from `at` until it conforms (it is charged now). */
  readonly delayMs?: number;
}

/** What became of a settle in the store. */
export type SettleOutcome = 'settled' | 'already-settled' | 'expired';

/** The reply's settle status (lua/main.lua), as an outcome: 0 applied, 1 settled before, 2 too old. */
export const SETTLE_OUTCOMES: readonly SettleOutcome[] = ['settled', 'already-settled', 'expired'];

/** Default `Store.announceMs` (RedisStore's `announceMs`): how often an instance announces itself to its fleet. */
export const DEFAULT_ANNOUNCE_MS = 5_000;

export interface Store {
  /** 'memory', 'redis', or a custom store's name; shown in logs. */
  readonly name: string;
  /**
   * Set when the store bounds each call itself: the longest a call can take, in ms (RedisStore: its
   * `timeoutMs`; MemoryStore: 0, it never waits). Left unset, the limiter puts its own `timeoutMs` on every call.
   */
  readonly timeoutMs?: number;
  /** Configuration risks found at construction (e.g. a client that resends commands); the limiter logs them once. */
  readonly warnings?: readonly string[];
  /**
   * Calls `listener` with each configuration risk found later (RedisStore: an evicting
   * maxmemory-policy, read after the first answer); the limiter logs each once. Optional.
   */
  onWarning?(listener: (warning: string) => void): void;
  /**
   * Calls `listener` each time the store's connection becomes ready again (RedisStore: the client's
   * 'ready' event). The circuit breaker then probes at once instead of waiting out its cool-down.
   * Optional: without it, the breaker probes on its timer only.
   */
  onReady?(listener: () => void): void;
  /**
   * The connection this store's calls travel on, when other stores may share it (RedisStore: the
   * client). Stores on one connection share one `onReady` listener (the first store's) and what
   * Floodgate learns of the connection's health. Optional: unset, the store is its own connection.
   */
  readonly connection?: object;
  /** Script calls sent and the requests they carried (RedisStore: requests / calls is the coalescing batch size). Optional. */
  readonly scriptStats?: { readonly calls: number; readonly requests: number };
  /**
   * Announces this instance (`member`) in the fleet under `key` for `ttlMs`, by the store's clock,
   * and resolves with the number of instances whose announcement has not expired, this one included
   * (failure/fleet-count.ts: the limiters' default `instances` is learned through it). Optional: a store
   * without it (MemoryStore, a custom store) learns nothing, and its limiters count 1 instance.
   */
  announce?(key: string, member: string, ttlMs: number): Promise<number>;
  /**
   * Records `value` for this instance (`member`) under `key` for `ttlMs`, by the store's clock, and
   * resolves with the values of every instance whose record has not expired, this one's included
   * (failure/fleet-count.ts: the configurations of the apps on a prefix, compared for FG_PREFIX_SHARED).
   * Optional: without it, sharing a prefix goes unnoticed.
   */
  peers?(key: string, member: string, value: string, ttlMs: number): Promise<readonly string[]>;
  /** How often (ms) a limiter on this store announces its instance through `announce`. Optional (default 5 s). */
  readonly announceMs?: number;
  /** Resolves with the store's decision; rejects only when the store itself failed. */
  evaluate(request: StoreRequest): Promise<StoreResult>;
  /**
   * The same decision, returned synchronously: for stores that never wait (MemoryStore). When a
   * store has it (and hot-key mode is off), the limiter answers without a promise in between, so an
   * adapter can serve the request in the same turn. Throws only when the store itself failed. Optional.
   */
  evaluateSync?(request: StoreRequest): StoreResult;
  /**
   * `evaluate`, its outcome told to `sink` (once: `answered` or `failed`) instead of through a
   * promise: a store that keeps its requests until a call returns (RedisStore) calls the sink where
   * it would resolve the request's promise, so the guard's continuation needs no promise and no
   * reaction of its own. It may be told before this returns (a request refused at once). Optional.
   */
  evaluateTo?(request: StoreRequest, sink: StoreSink): void;
  /** Deletes the state under these keys. */
  reset(keys: readonly string[]): Promise<void>;
  /**
   * Overrides (limiter.override, docs/runtime-limits.md): writes a subject's override string under
   * `key` for `ttlMs` by the store's clock (it expires by itself), and its record in the prefix's
   * `index` until then. Optional: a store without them takes no overrides (FG_OVERRIDES_OFF).
   */
  putOverride?(key: string, value: string, ttlMs: number, index: OverrideIndexEntry): Promise<void>;
  /** Deletes a subject's override and its index record. */
  dropOverride?(key: string, index: Omit<OverrideIndexEntry, 'record'>): Promise<void>;
  /** The records of `indexKey` whose override has not expired. */
  listOverrides?(indexKey: string): Promise<string[]>;
  /**
   * Broad overrides (a route, everything): sets `field` of the hash `key` to `value` with `until`
   * (the store's clock now + ttlMs) added, the hash expiring with its last field. Optional.
   */
  putBroad?(key: string, field: string, value: Record<string, unknown>, ttlMs: number): Promise<void>;
  /** Deletes one broad override. */
  dropBroad?(key: string, field: string): Promise<void>;
  /** Every value of the broad overrides' hash (each JSON naming its `scope`; the keys of `fields` are not scopes), and the store's clock (ms) to compare their `until` with. */
  readBroad?(key: string): Promise<{ now: number; fields: Record<string, string> }>;
}

/** A record in a prefix's index of overrides: `field` names the target (one record per target). */
export interface OverrideIndexEntry {
  readonly key: string;
  readonly field: string;
  readonly record: string;
}

/** Who hears a request's outcome from `Store.evaluateTo`: told once, never throws back into the store. */
export interface StoreSink {
  answered(result: StoreResult): void;
  failed(error: unknown): void;
}

/** A store option (a limiter's `store`, HotKeyStore's `store`): anything with `evaluate` and `reset`, checked by shape. */
export function storeOption(option: string, value: unknown): Store {
  const store = value as Store | undefined;
  if (!store || typeof store.evaluate !== 'function' || typeof store.reset !== 'function') {
    invalidOption(option, value, 'a Store such as new MemoryStore() or new RedisStore({ client })');
  }
  return store;
}
