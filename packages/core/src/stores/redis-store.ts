// RedisStore: every decision is one EVALSHA of one atomic script, on an ioredis, iovalkey, node-redis or Valkey GLIDE client or cluster (coalescing, deadlines, refusals named).
import { FloodgateError, invalidOption } from '../errors';
import { storeErrorKind } from '../metrics';
import { aclRule } from './redis-acl';
import { parseDuration } from '../duration';
import { checkOptionNames, clockOption, optionNames, refundAt } from '../validate';
import { withDeadline } from '../deadline';
import { bindClient, isIoredis, isNodeRedis, type ClientBinding, type RedisClient } from './redis-clients';
import { encodeCall, parseReply, runScript } from './redis-protocol';
import type { Store, StoreRequest, StoreResult } from './store';

export interface RedisStoreOptions {
  /**
   * The client the app already has, connected by the app; Floodgate never connects nor closes it.
   * - ioredis `Redis` or `Cluster`: create it with `autoResendUnfulfilledCommands: false`, otherwise
   *   ioredis sends a command again after a reconnect and a script Redis already ran counts twice
   *   (Floodgate warns at construction). Keep a reconnecting `retryStrategy` (the default).
   * - node-redis `createClient()` or `createCluster()` (`redis` v5 and v6): call `await client.connect()`
   *   first. node-redis rejects commands in flight when a connection drops (no resend), and
   *   Floodgate sends nothing while it reconnects, so its offline queue never holds a decision.
   *   Keep the default `reconnectStrategy` (Floodgate warns on `false`).
   * - node-redis `createSentinel()`: as createClient(); commands go to the master.
   * - iovalkey (the ioredis fork for Valkey): as ioredis.
   * - Valkey GLIDE `GlideClient.createClient()` or `GlideClusterClient.createClient()`: already
   *   connected when created; keep its `requestTimeout` at or above `timeoutMs`.
   * Give the client an 'error' listener: ioredis prints unhandled connection errors, and node-redis
   * without one ends the process (Floodgate warns at construction).
   * Production setups (TLS, ACL users, Sentinel, Cluster): docs/production-redis.md.
   */
  client: RedisClient;
  /**
   * Longest wait for one decision, in ms (or a duration string). Past it the call fails with
   * FG_STORE_TIMEOUT and is never retried: the script may already have counted. Default 100: a
   * Redis on the same network answers in about a millisecond, so 100 ms is far above a healthy
   * answer yet caps what a hung Redis adds to a request (until the circuit breaker skips it).
   */
  timeoutMs?: number | string;
  /**
   * TESTS ONLY. Replaces Redis `TIME` with this clock inside the scripts. Never set it in
   * production: the whole point of the scripts is that the application's clock is not trusted.
   */
  UNSAFE_testClock?: () => number;
  /**
   * How requests for the same subject share script calls; each request is still decided on its own,
   * in arrival order, exactly as if sent alone (the script runs them one after another).
   * - 'turn' (default): requests made in the same turn of the event loop go together in one call,
   *   sent at the end of that turn (`setImmediate`), so no request waits for another's round trip.
   *   Under concurrent load a hot subject costs Redis and the application one script call per turn
   *   instead of one per request; an idle server sends each request alone, as before. The turn's
   *   calls for different subjects leave in one socket write (per Cluster node), which Redis reads
   *   and parses in one go.
   * - 'in-flight': also holds a subject's requests while its previous call is in flight and sends
   *   them together when it returns: fewest calls (200 concurrent requests: under 20), but a
   *   request may wait for the round trip ahead of it. For when Redis CPU is what a hot subject exhausts.
   * - false: one script call per request.
   */
  coalesce?: CoalesceMode;
}

const REDIS_STORE_OPTION_NAMES = optionNames<RedisStoreOptions>()(['client', 'timeoutMs', 'UNSAFE_testClock', 'coalesce']);

/** See `RedisStoreOptions.coalesce`. */
export type CoalesceMode = 'turn' | 'in-flight' | false;

interface Waiter {
  request: StoreRequest;
  /** The test clock when the request was made (UNSAFE_testClock only). */
  now?: number;
  resolve(result: StoreResult): void;
  reject(error: unknown): void;
}

/** Most requests sent in one coalesced call; the rest go in the next one. */
const MAX_BATCH = 64;

// Requests can share a call only when they name the same keys, limits and mode: refunds coalesce
// only with refunds of the same subject, each applied on its own with its own `at` (exact).
const limitIds = new WeakMap<object, number>();
let nextLimitId = 0;
function batchKey(request: StoreRequest, now: number | undefined): string {
  let id = limitIds.get(request.limits);
  if (id === undefined) limitIds.set(request.limits, (id = nextLimitId++));
  const keys = request.keys.length === 1 ? request.keys[0] : request.keys.join('|');
  // With a test clock, only requests made at the same test time share a call (one clock per call).
  return `${request.mode[0]}${id}${now === undefined ? '' : `@${now}`}|${keys}`;
}

/** Who wants to hear that a client is ready again (RedisStore.onReady), by client. */
const readyListeners = new WeakMap<object, Set<() => void>>();

const COALESCE_MODES: readonly CoalesceMode[] = ['turn', 'in-flight', false];

const CLIENTS = 'an ioredis (or iovalkey) Redis or Cluster, a node-redis createClient(), createCluster() or createSentinel() client, or a Valkey GLIDE GlideClient or GlideClusterClient';

/**
 * maxmemory-policy values under which Redis deletes keys when full. Floodgate's keys all carry a TTL,
 * so the volatile-* policies evict them as readily as allkeys-*: a deleted counter is a fresh budget.
 */
const EVICTING = /^(allkeys|volatile)-(lru|lfu|random)$|^volatile-ttl$/;

/** CONFIG GET's reply as name -> value, whatever shape the client gives it (flat array, object, Map, GLIDE's [{ key, value }]). */
function configPairs(reply: unknown): Map<string, string> {
  const pairs = new Map<string, string>();
  if (reply instanceof Map) for (const [k, v] of reply) pairs.set(String(k), String(v));
  else if (Array.isArray(reply)) {
    if (reply.every((e) => e !== null && typeof e === 'object' && 'key' in e && 'value' in e)) {
      for (const e of reply as { key: unknown; value: unknown }[]) pairs.set(String(e.key), String(e.value));
    } else for (let i = 0; i + 1 < reply.length; i += 2) pairs.set(String(reply[i]), String(reply[i + 1]));
  } else if (reply !== null && typeof reply === 'object') for (const [k, v] of Object.entries(reply)) pairs.set(k, String(v));
  return pairs;
}

/** What a Redis refusal means and what fixes it, by kind; the prefix comes from the call's first key. */
const REFUSALS = {
  noperm: {
    code: 'FG_STORE_NOPERM',
    explain: (prefix: string) =>
      `the Redis user's ACL does not allow a command or key Floodgate's scripts use (Redis 7 checks every command a script runs). ` +
      `Grant it exactly the least-privilege rule: ACL SETUSER <user> ${aclRule({ prefix })} ` +
      `(aclRule({ prefix: '${prefix}' }) from @floodgate/core prints it; docs/production-redis.md#acl)`,
  },
  oom: {
    code: 'FG_STORE_OOM',
    explain: () =>
      'Redis reached maxmemory and refuses writes (maxmemory-policy noeviction); nothing was counted. ' +
      'Raise maxmemory or give rate-limit state a Redis of its own; do not switch to an evicting policy, ' +
      'which deletes counters and hands callers a fresh budget (docs/production-redis.md#memory-policy)',
  },
  readonly: {
    code: 'FG_STORE_READONLY',
    explain: () =>
      'the connection reached a read-only replica, typically a master demoted by a failover while the client stayed connected to it. ' +
      'Connect through Sentinel or the Cluster client so writes follow the master, and have the client reconnect on READONLY ' +
      "(ioredis: reconnectOnError: (e) => e.message.startsWith('READONLY')) (docs/production-redis.md#sentinel)",
  },
} as const;

/** A Redis refusal as a FloodgateError whose message names the fix; any other error as it is. */
function explainRefusal(error: unknown, keys: readonly string[]): never {
  const kind = storeErrorKind(error);
  if (kind === 'noperm' || kind === 'oom' || kind === 'readonly') {
    const refusal = REFUSALS[kind];
    const said = error instanceof Error ? error.message : String(error);
    const prefix = keys[0]?.slice(0, Math.max(0, keys[0].indexOf(':'))) || 'fg';
    throw Object.assign(new FloodgateError(refusal.code, `Redis refused the script (${said.trim()}): ${refusal.explain(prefix)}.`), { cause: error });
  }
  throw error;
}

export class RedisStore implements Store {
  readonly name = 'redis';
  readonly timeoutMs: number;
  /** Configuration risks: the client's (found at construction), then Redis's own (an evicting maxmemory-policy, found after the first answer). */
  readonly warnings: readonly string[];
  /**
   * What `CONFIG GET maxmemory*` said, read once after the first answer: the policy and the limit
   * in bytes (0: none), or why it could not be read (CONFIG forbidden by the ACL, renamed, as on
   * managed services). Undefined until then.
   */
  memoryPolicy: { readonly policy: string; readonly maxmemory: number; readonly evicts: boolean } | { readonly unknown: string } | undefined;
  private readonly warningList: string[];
  private readonly warningListeners = new Set<(warning: string) => void>();
  private memoryChecked = false;
  /** The client bound to the protocol's one seam (stores/redis-protocol.ts). */
  private readonly client: ClientBinding;
  /** The app's client itself, for its public 'ready' event (ioredis and node-redis both emit it). */
  private readonly raw: { on?(event: 'ready', listener: () => void): unknown };
  private readonly testClock?: () => number;
  private readonly coalesce: CoalesceMode;
  /** 'in-flight': subjects with a call in flight, and the requests waiting for it to return. */
  private readonly batches = new Map<string, Waiter[]>();
  /** 'turn': this turn's requests by subject, sent together when the turn ends. */
  private turn = new Map<string, Waiter[]>();
  private turnScheduled = false;
  /** Script calls sent and the requests they carried: requests / calls is the coalescing batch size. */
  readonly scriptStats = { calls: 0, requests: 0 };

  constructor(options: RedisStoreOptions) {
    if (!options || typeof options !== 'object') invalidOption('RedisStore', options, 'an options object { client }');
    if (isIoredis(options) || isNodeRedis(options)) {
      invalidOption('RedisStore', options, 'an options object: new RedisStore({ client })');
    }
    checkOptionNames('RedisStore options', options, REDIS_STORE_OPTION_NAMES);
    const client = bindClient(options.client);
    if (!client) invalidOption('client', options.client, CLIENTS);
    this.client = client;
    this.raw = options.client as RedisStore['raw'];
    this.timeoutMs = parseDuration('timeoutMs', options.timeoutMs ?? 100, 1, 60_000);
    this.testClock = clockOption('UNSAFE_testClock', options.UNSAFE_testClock);
    if (options.coalesce !== undefined && !COALESCE_MODES.includes(options.coalesce)) {
      invalidOption('coalesce', options.coalesce, "'turn' (the default), 'in-flight' or false");
    }
    this.coalesce = options.coalesce ?? 'turn';
    this.warningList = [...client.warnings];
    this.warnings = this.warningList;
  }

  /** Calls `listener` with each warning found after construction (the limiter logs it once). */
  onWarning(listener: (warning: string) => void): void {
    this.warningListeners.add(listener);
  }

  /**
   * Once, after the first answer: does this Redis evict keys when full? Off the request path and
   * never failing one: a Redis that forbids or renames CONFIG (ACL users, managed services) is
   * tolerated and the check is skipped.
   */
  private checkMemoryPolicy(): void {
    if (this.memoryChecked) return;
    this.memoryChecked = true;
    const command = this.client.command;
    if (!command) {
      this.memoryPolicy = { unknown: 'the client has no way to send CONFIG GET' };
      return;
    }
    withDeadline(command(['CONFIG', 'GET', 'maxmemory*']), 5_000, 'Redis CONFIG GET').then(
      (reply) => {
        const pairs = configPairs(reply);
        const policy = pairs.get('maxmemory-policy');
        if (policy === undefined) {
          this.memoryPolicy = { unknown: 'CONFIG GET returned no maxmemory-policy' };
          return;
        }
        const maxmemory = Number(pairs.get('maxmemory') ?? 0);
        // Without a maxmemory (0, the default on 64-bit systems) Redis never evicts, whatever the policy.
        const evicts = EVICTING.test(policy) && maxmemory > 0;
        this.memoryPolicy = { policy, maxmemory, evicts };
        if (evicts) {
          this.warn(
            `RedisStore: Redis's maxmemory-policy is '${policy}' (maxmemory ${maxmemory} bytes): when Redis is full it deletes keys, ` +
              "Floodgate's counters among them, and a caller whose counter was deleted gets a fresh budget. Set " +
              "maxmemory-policy to 'noeviction' on the Redis that holds rate-limit state (writes then fail with OOM, " +
              'which the failure policy answers), or give it a Redis of its own (see docs/production-redis.md#memory-policy).',
          );
        }
      },
      (error: unknown) => {
        this.memoryPolicy = { unknown: error instanceof Error ? error.message : String(error) };
      },
    );
  }

  private warn(warning: string): void {
    this.warningList.push(warning);
    for (const listener of this.warningListeners) listener(warning);
  }

  onReady(listener: () => void): void {
    const client = this.raw;
    if (typeof client.on !== 'function') return;
    let listeners = readyListeners.get(client);
    if (!listeners) {
      // One 'ready' listener per client, however many stores and breakers use it.
      readyListeners.set(client, (listeners = new Set()));
      const all = listeners;
      client.on('ready', () => all.forEach((l) => l()));
    }
    listeners.add(listener);
  }

  evaluate(request: StoreRequest): Promise<StoreResult> {
    try {
      // A bad refund fails alone, before it could share (and fail) a coalesced call.
      if (request.mode === 'refund') refundAt(request.at);
      this.checkConnection();
    } catch (error) {
      return Promise.reject(error);
    }
    // The test clock is read when the request is made, so a batch never moves a request in time.
    const now = this.testClock ? Math.floor(this.testClock()) : undefined;
    if (this.coalesce === false) return this.send([request], now).then((results) => results[0]);
    const key = batchKey(request, now);
    if (this.coalesce === 'turn') {
      return new Promise((resolve, reject) => {
        const waiter = { request, now, resolve, reject };
        const group = this.turn.get(key);
        if (group) group.push(waiter);
        else this.turn.set(key, [waiter]);
        if (!this.turnScheduled) {
          this.turnScheduled = true;
          setImmediate(this.endTurn);
        }
      });
    }
    const queued = this.batches.get(key);
    if (queued) return new Promise((resolve, reject) => queued.push({ request, now, resolve, reject }));
    this.batches.set(key, []);
    return new Promise((resolve, reject) => this.dispatch(key, [{ request, now, resolve, reject }]));
  }

  /**
   * 'turn': the event loop's turn is over; each subject's requests of it go in one call (at most
   * MAX_BATCH), and the calls of every subject in one socket write (per connection: see
   * ClientBinding.batch). Each call keeps its own deadline, NOSCRIPT retry and result.
   */
  private readonly endTurn = (): void => {
    this.turnScheduled = false;
    const groups = this.turn;
    this.turn = new Map();
    this.client.batch(() => {
      for (const group of groups.values()) {
        // Each waiter already got the failure; nothing else waits on the call.
        for (let i = 0; i < group.length; i += MAX_BATCH) this.settle(group.slice(i, i + MAX_BATCH)).catch(() => {});
      }
    });
  };

  /** One call for a batch; each waiter gets its own result, or the call's error. Rejects when the call failed. */
  private settle(batch: Waiter[]): Promise<void> {
    return this.send(
      batch.map((w) => w.request),
      batch[0].now,
    ).then(
      (results) => {
        for (let i = 0; i < batch.length; i++) batch[i].resolve(results[i]);
      },
      (error: unknown) => {
        for (const w of batch) w.reject(error);
        throw error;
      },
    );
  }

  /**
   * Coalescing: while one call for a subject is in flight, later requests for the same subject
   * wait and then go together in ONE script call, in arrival order, each decided on its own, exactly
   * as if sent one by one (the script runs them in sequence). A hot subject costs one round trip per
   * batch instead of one per request.
   */
  private dispatch(key: string, batch: Waiter[]): void {
    this.settle(batch).then(
      () => {
        const queued = this.batches.get(key);
        if (!queued || queued.length === 0) this.batches.delete(key);
        else this.dispatch(key, queued.splice(0, MAX_BATCH));
      },
      (error: unknown) => {
        // Requests queued behind a failed call were never sent: fail them now rather than send
        // them to a store that just failed (the failure policy answers them at once).
        const queued = this.batches.get(key);
        this.batches.delete(key);
        if (queued) for (const w of queued) w.reject(error);
      },
    );
  }

  /** One script call for requests on the same keys and limits; one result per request, in order. */
  private async send(requests: readonly StoreRequest[], now: number | undefined): Promise<StoreResult[]> {
    const call = encodeCall(requests, now);
    this.scriptStats.calls++;
    this.scriptStats.requests += requests.length;
    const deadline = { expired: false };
    const reply = await withDeadline(
      runScript(this.client.send, call, () => deadline.expired).then(undefined, (error: unknown) => explainRefusal(error, call.keys)),
      this.timeoutMs,
      'Redis',
      () => {
        deadline.expired = true;
      },
    );
    if (!this.memoryChecked) this.checkMemoryPolicy();
    return parseReply(reply, call);
  }

  async reset(keys: readonly string[]): Promise<void> {
    this.checkConnection();
    // One DEL per key: on a Cluster all keys of a subject share a slot, but be safe across subjects.
    await withDeadline(Promise.all(keys.map((key) => this.client.del(key))), this.timeoutMs, 'Redis');
  }

  /** Fails at once, without queueing, when the connection cannot answer now. */
  private checkConnection(): void {
    const reason = this.client.unavailable();
    if (reason !== undefined) throw new FloodgateError('FG_STORE_UNAVAILABLE', reason);
  }
}
