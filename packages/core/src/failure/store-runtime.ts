// One runtime per store: its breakers, call counts, health monitor, reporters, bucket claims and ready listener, found or made in one place.
import type { Logger } from '../base/logger';
import type { FloodgateMetrics, StoreMonitor } from '../observe/metrics';
import { ATTR, STORE_ERROR_KINDS, type StoreErrorKind } from '../observe/metrics';
import { DEFAULT_ANNOUNCE_MS, type Store } from '../stores/store';
import { CircuitBreaker, type ResolvedBreakerOptions } from './breaker';
import { FleetCount } from './fleet-count';
import { Reporters } from './report';

/** One limiter's definition of a bucket on this store (see http/bucket-claims.ts). */
export interface BucketClaim {
  readonly definition: string;
  readonly describe: string;
  readonly where: string;
}

/**
 * One circuit breaker of a store and what hangs off it: limiters with the same breaker settings and
 * clock share it (every route sees one outage), its health monitor, its reporters, and the meters
 * that count its state changes.
 */
export class StoreChannel {
  readonly breaker: CircuitBreaker;
  readonly monitor: StoreMonitor;
  readonly reporters: Reporters;
  /** performance.now() of this channel's last answer (on time or late); undefined before the first. */
  answeredAt: number | undefined = undefined;
  private readonly meters = new WeakSet<FloodgateMetrics>();

  constructor(
    readonly runtime: StoreRuntime,
    options: ResolvedBreakerOptions,
    clock: () => number,
  ) {
    const store = runtime.store.name;
    this.breaker = new CircuitBreaker(options, clock);
    const errors = Object.fromEntries(STORE_ERROR_KINDS.map((kind) => [kind, 0])) as Record<StoreErrorKind, number>;
    // lastSuccessAt is read (health) far less often than calls answer: an answer records only
    // performance.now() (answeredAt, which the connection's slow-store check reads too), and the
    // wall-clock time is worked out from it when read, from Date.now() at that moment.
    const channel = this;
    this.monitor = {
      store,
      breaker: this.breaker,
      calls: 0,
      errors,
      lastError: undefined,
      get lastSuccessAt() {
        const at = channel.answeredAt;
        return at === undefined ? undefined : Math.round(Date.now() - (performance.now() - at));
      },
      lateAnswers: 0,
      slowTimeouts: 0,
      shed: 0,
      scriptErrors: 0,
    };
    this.reporters = new Reporters(this.breaker, store);
  }

  /** Shows this channel on this meter: its monitor, and its state changes counted once however many limiters share them. */
  countOn(meter: FloodgateMetrics): void {
    meter.stores.add(this.monitor);
    if (this.meters.has(meter)) return;
    this.meters.add(meter);
    const store = this.runtime.store.name;
    const byState = {
      closed: { [ATTR.store]: store, [ATTR.state]: 'closed' },
      open: { [ATTR.store]: store, [ATTR.state]: 'open' },
      'half-open': { [ATTR.store]: store, [ATTR.state]: 'half-open' },
    };
    this.breaker.subscribe((t) => meter.breakerTransitions.add(1, byState[t.to]));
  }
}

/** Everything Floodgate keeps about one store object. */
export class StoreRuntime {
  /** Bucket definitions by `prefix\0scope\0keySuffix` (http/bucket-claims.ts). */
  readonly claims = new Map<string, BucketClaim>();
  private readonly channels: StoreChannel[] = [];
  private warned = false;

  constructor(
    readonly store: Store,
    /** What this store shares with the other stores on its connection. */
    readonly connection: ConnectionRuntime,
  ) {}

  /** The channel (breaker) for these settings and clock, made once. */
  channel(options: ResolvedBreakerOptions, clock: () => number): StoreChannel {
    const same = this.channels.find(
      (c) =>
        c.breaker.options.failureThreshold === options.failureThreshold &&
        c.breaker.options.coolDownMs === options.coolDownMs &&
        c.breaker.options.maxCoolDownMs === options.maxCoolDownMs &&
        c.breaker.clock === clock,
    );
    if (same) return same;
    const channel = new StoreChannel(this, options, clock);
    this.channels.push(channel);
    return channel;
  }

  /** Logs the store's configuration warnings, those found at construction and those found later, once per store. */
  warnOnce(logger: Logger): void {
    if (this.warned) return;
    this.warned = true;
    const store = this.store;
    for (const warning of store.warnings ?? []) logger.warn(`[floodgate] ${warning}`, { store: store.name });
    store.onWarning?.((warning) => logger.warn(`[floodgate] ${warning}`, { store: store.name }));
  }

  /** The store's connection is ready again: every breaker on it probes at the next request. */
  reconnected(): void {
    for (const c of this.channels) c.breaker.reconnected();
  }
}

/**
 * What the stores on one connection share (`Store.connection`, RedisStore: its client; else the
 * store itself): one 'ready' listener on it however many stores and breakers use it, and the count
 * of its answers (evidence that it is alive).
 */
export class ConnectionRuntime {
  /** Answers received on this connection, on time or late: a timeout with answers since its call began is slowness, not an outage. */
  answers = 0;
  /** performance.now() of the last answer; -Infinity before the first. */
  lastAnswerAt = -Infinity;
  private readonly stores = new WeakMap<Store, StoreRuntime>();
  /** Each limiter prefix's fleet on this connection, held weakly: the limiters that use it hold it. */
  private readonly fleets = new Map<string, WeakRef<FleetCount>>();
  /** Each prefix's last count, kept when its fleet is collected: a limiter made later starts from it, not from 1. */
  private readonly lastCounts = new Map<string, number>();
  // Held weakly: the client may outlive its stores' limiters.
  private readonly ready = new Set<WeakRef<StoreRuntime>>();
  private listening = false;

  /** This store's runtime, made at its first use. */
  storeRuntime(store: Store): StoreRuntime {
    let runtime = this.stores.get(store);
    if (runtime) return runtime;
    this.stores.set(store, (runtime = new StoreRuntime(store, this)));
    if (typeof store.onReady === 'function') {
      this.ready.add(new WeakRef(runtime));
      if (!this.listening) {
        this.listening = true;
        store.onReady(() => this.reconnected());
      }
    }
    return runtime;
  }

  /**
   * The fleet of this prefix on this connection, announced through `store` (the first store to ask
   * sets the period): one announcement per prefix and connection, however many limiters and stores
   * of this process use it. Undefined for a store that cannot announce.
   */
  fleet(prefix: string, store: Store): FleetCount | undefined {
    if (typeof store.announce !== 'function') return undefined;
    const known = this.fleets.get(prefix)?.deref();
    if (known) return known;
    const peers = typeof store.peers === 'function' ? store.peers.bind(store) : undefined;
    const fleet = new FleetCount(prefix, store.announce.bind(store), store.announceMs ?? DEFAULT_ANNOUNCE_MS, this.lastCounts.get(prefix), (n) => this.lastCounts.set(prefix, n), peers);
    this.fleets.set(prefix, new WeakRef(fleet));
    return fleet;
  }

  private reconnected(): void {
    for (const ref of this.ready) {
      const runtime = ref.deref();
      if (runtime) runtime.reconnected();
      else this.ready.delete(ref);
    }
  }
}

// The only module-level registry of the failure path: each connection's runtime, held as long as the connection is.
const connections = new WeakMap<object, ConnectionRuntime>();

/** The runtime of this store (and of its connection), made at its first use: the one find-or-create. */
export function runtimeFor(store: Store): StoreRuntime {
  const key = store.connection ?? store;
  let connection = connections.get(key);
  if (!connection) connections.set(key, (connection = new ConnectionRuntime()));
  return connection.storeRuntime(store);
}
