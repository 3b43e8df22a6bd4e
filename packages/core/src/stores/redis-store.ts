// RedisStore: every decision is one EVALSHA of one atomic script, on an ioredis, iovalkey, node-redis or Valkey GLIDE client or cluster (coalescing, deadlines, refusals named).
import { FloodgateError, invalidOption, withoutStack } from '../base/errors';
import { storeErrorKind } from '../observe/metrics';
import { aclRule } from './redis-acl';
import { parseDuration } from '../base/duration';
import { checkOptionNames, clockOption, optionNames, leaseToken, refundAt, wholeNumber } from '../base/validate';
import { StoreTimeout, withDeadline } from '../base/deadline';
import { bindClient, isIoredis, isNodeRedis, type ClientBinding, type RedisClient } from './redis-clients';
import { encodeGroupsOf, parseReply, runScript, scriptFor, type ReplyEntry, type ScriptCall } from './redis-protocol';
import { InFlightLane } from './in-flight';
import { slotOf } from './redis-slot';
import { DEFAULT_ANNOUNCE_MS, type Store, type StoreRequest, type StoreResult } from './store';

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
   *   requests for different subjects share that call too (every key declared, each subject
   *   decided on its own, atomically), on a Cluster those of one hash slot: one call per turn
   *   instead of one per subject. Calls that remain (other slots, modes, algorithms) leave in one
   *   socket write (per Cluster node), which Redis reads and parses in one go.
   * - 'in-flight': also holds a subject's requests while its previous call is in flight and sends
   *   them together when it returns: fewest calls (200 concurrent requests: under 20), but a
   *   request may wait for the round trip ahead of it. For when Redis CPU is what a hot subject exhausts.
   * - false: one script call per request.
   */
  coalesce?: CoalesceMode;
  /**
   * Most script calls this store keeps in flight on each Redis node at once (sent, not yet
   * answered, late answers included: a call that timed out still occupies Redis until it runs); on
   * a Cluster per master, by the client's slot map (ioredis, iovalkey, node-redis), so a slow or
   * paused master does not hold up calls to the others (Valkey GLIDE's cluster client shows no
   * slot map: one bound for the whole store). One more call
   * waits in this process, never on Redis, for one of them to end; if none ends before its deadline
   * it is never sent, fails with FG_STORE_OVERLOADED, and the limiter decides it locally with this
   * instance's share of the limit, within the deadline (docs/failure-modes.md#bounded-load). So a
   * flood never builds a queue on Redis past the deadline, nor admits without limit. Requests that
   * share a coalesced call count once. A whole number from 1. Default 256.
   */
  maxInFlight?: number;
  /**
   * How often, in ms (or a duration string), each process announces itself to the limiters' fleet
   * on this Redis, so that every instance learns how many share a limit (the default `instances`:
   * docs/failure-modes.md#instances). An announcement lasts 3 periods: a process that dies leaves
   * the count within about 3 periods. Five plain commands per period and limiter prefix
   * (TIME, then ZADD, ZREMRANGEBYSCORE, ZCARD and PEXPIRE), off the request path. From 100 ms to 10 min.
   * Default 5000. Limiters with a fixed `instances` never announce.
   */
  announceMs?: number | string;
}

const REDIS_STORE_OPTION_NAMES = optionNames<RedisStoreOptions>()(['client', 'timeoutMs', 'UNSAFE_testClock', 'coalesce', 'maxInFlight', 'announceMs']);

/** See `RedisStoreOptions.coalesce`. */
export type CoalesceMode = 'turn' | 'in-flight' | false;

/** A request's entry of its call's reply as its answer: its result, or its subject's own script error thrown (FG_STORE_SCRIPT). */
const own = (entry: ReplyEntry): StoreResult => {
  if (entry instanceof FloodgateError) throw entry;
  return entry;
};
const first = (results: ReplyEntry[]): StoreResult => own(results[0]);

/** A request waiting for its call, with its promise's two ends. One object per request, one shape. */
class Waiter {
  resolve: (result: StoreResult) => void = ignoreResult;
  reject: (error: unknown) => void = ignoreResult;
  /** 'in-flight': performance.now() when the request was made; its deadline runs from then, however long it waited for the call ahead. */
  madeAt: number | undefined = undefined;
  constructor(
    readonly request: StoreRequest,
    /** The test clock when the request was made (UNSAFE_testClock only). */
    readonly now: number | undefined,
  ) {}
}

const ignoreResult = (): void => undefined;

/**
 * The promise of a waiter, without an executor closure per request: the executor runs synchronously
 * inside `new Promise`, so the waiter it fills is the one set just before.
 */
let filling: Waiter | undefined;
const fill = (resolve: (result: StoreResult) => void, reject: (error: unknown) => void): void => {
  filling!.resolve = resolve;
  filling!.reject = reject;
};
function promiseOf(waiter: Waiter): Promise<StoreResult> {
  filling = waiter;
  const promise = new Promise(fill);
  filling = undefined;
  return promise;
}

/** What encodeGroups reads of a group's items: a waiter's request, or the request itself (one function each, not one per call). */
const requestOf = (waiter: Waiter): StoreRequest => waiter.request;
const itself = (request: StoreRequest): StoreRequest => request;

/** Memoised per keys array (a subject's, kept by its limiter): its batch key for consumes without a test clock, with the limits it was made for. */
interface KeysInfo {
  readonly limits: object;
  readonly consumeKey: string;
}

/** Most requests sent in one coalesced call, of one subject or several; the rest go in the next one, so no one script holds Redis long. */
const MAX_BATCH = 64;

/** Lanes kept before idle ones are dropped: more than any Cluster's masters a store talks to at once. */
const MAX_LANES = 64;

/** Default `maxInFlight`: see docs/failure-modes.md#bounded-load. */
export const DEFAULT_MAX_IN_FLIGHT = 256;

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

/** TIME's reply ([seconds, microseconds], as strings or numbers) in ms; a cluster-wide reply (one per node) gives its first node's. */
function redisTimeMs(reply: unknown): number {
  let pair = reply;
  if (pair instanceof Map) pair = [...pair.values()][0];
  else if (pair !== null && typeof pair === 'object' && !Array.isArray(pair)) pair = Object.values(pair)[0];
  if (Array.isArray(pair) && pair.length >= 2) {
    const ms = Number(pair[0]) * 1000 + Math.floor(Number(pair[1]) / 1000);
    if (Number.isFinite(ms)) return ms;
  }
  throw new FloodgateError('FG_STORE_REPLY', `Unexpected TIME reply: ${JSON.stringify(reply)}`);
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
  /** A small id per limits array, for batch keys (held weakly: limiters come and go). */
  private readonly limitIds = new WeakMap<object, number>();
  private nextLimitId = 0;
  /** The script each limits array runs (held weakly, as limitIds). */
  private readonly scriptNames = new WeakMap<object, string>();
  /** Per limits array, its share keys by mode (no test clock, no Cluster slot): built once, not per group and turn. */
  private readonly shareKeys = new WeakMap<object, Partial<Record<StoreRequest['mode'], string>>>();
  /** Per keys array, its consume batch key (see batchKey; held weakly: subjects come and go). */
  private readonly keysInfo = new WeakMap<readonly string[], KeysInfo>();
  private nextSettle = 0;
  /**
   * The `maxInFlight` bound, per Redis node: on a Cluster one lane per master (by the client's own
   * slot map), so a node that is slow or paused does not hold up the calls to the others; one
   * lane for a single server, Sentinel's master, and clients whose slot map is not known.
   */
  private readonly lanes = new Map<string, InFlightLane>();
  readonly maxInFlight: number;
  readonly announceMs: number;
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
    this.maxInFlight = wholeNumber('maxInFlight', options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT, 1, 1_000_000);
    this.announceMs = parseDuration('announceMs', options.announceMs ?? DEFAULT_ANNOUNCE_MS, 100, 600_000);
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

  /** The app's client: stores on one client share its 'ready' listener (failure/store-runtime.ts). */
  get connection(): object {
    return this.raw;
  }

  /** The client's own 'ready' event; Floodgate listens once per client (failure/store-runtime.ts). */
  onReady(listener: () => void): void {
    if (typeof this.raw.on === 'function') this.raw.on('ready', listener);
  }

  evaluate(request: StoreRequest): Promise<StoreResult> {
    try {
      // A bad refund fails alone, before it could share (and fail) a coalesced call.
      if (request.mode === 'refund' || request.mode === 'settle') refundAt(request.at);
      if (request.mode === 'settle') leaseToken(request.token);
      this.checkConnection();
    } catch (error) {
      return Promise.reject(error);
    }
    // The test clock is read when the request is made, so a batch never moves a request in time.
    const now = this.testClock ? Math.floor(this.testClock()) : undefined;
    if (this.coalesce === false) {
      return this.send([[request]], itself, now).then(first, (error: unknown) => {
        throw error instanceof StoreTimeout ? (error as StoreTimeout<ReplyEntry[]>).part(first) : error;
      });
    }
    const key = this.batchKey(request, now);
    const waiter = new Waiter(request, now);
    const promise = promiseOf(waiter);
    if (this.coalesce === 'turn') {
      const group = this.turn.get(key);
      if (group) group.push(waiter);
      else this.turn.set(key, [waiter]);
      if (!this.turnScheduled) {
        this.turnScheduled = true;
        setImmediate(this.endTurn);
      }
      return promise;
    }
    const queued = this.batches.get(key);
    if (queued) {
      waiter.madeAt = performance.now();
      queued.push(waiter);
    } else {
      this.batches.set(key, []);
      try {
        this.dispatch(key, [waiter]);
      } catch (error) {
        waiter.reject(error); // as when dispatch ran inside the promise's executor
      }
    }
    return promise;
  }

  // Requests can share a call only when they name the same keys, limits and mode: refunds coalesce
  // only with refunds of the same subject, each applied on its own with its own `at` (exact).
  private batchKey(request: StoreRequest, now: number | undefined): string {
    // The common request (a consume, no test clock) of a subject seen before: its key, built once.
    const memo = request.mode === 'consume' && now === undefined;
    if (memo) {
      const known = this.keysInfo.get(request.keys);
      if (known !== undefined && known.limits === request.limits) return known.consumeKey;
    }
    const key = this.newBatchKey(request, now);
    if (memo) this.keysInfo.set(request.keys, { limits: request.limits, consumeKey: key });
    return key;
  }

  private newBatchKey(request: StoreRequest, now: number | undefined): string {
    let id = this.limitIds.get(request.limits);
    if (id === undefined) this.limitIds.set(request.limits, (id = this.nextLimitId++));
    const keys = request.keys.length === 1 ? request.keys[0] : request.keys.join('|');
    // With a test clock, only requests made at the same test time share a call (one clock per call).
    return `${request.mode[0]}${id}${now === undefined ? '' : `@${now}`}|${keys}`;
  }

  /**
   * 'turn': the event loop's turn is over; each subject's requests of it go in one group, and
   * groups that can share a script call go in one: the same mode, script and test time, and on a
   * Cluster the same hash slot; at most MAX_BATCH requests a call. The calls that remain leave in
   * one socket write (per connection: see ClientBinding.batch). Each call keeps its own deadline,
   * NOSCRIPT retry and results.
   */
  private readonly endTurn = (): void => {
    this.turnScheduled = false;
    const groups = this.turn;
    this.turn = new Map();
    // One subject (the common case under one hot caller): one call, nothing to sort.
    if (groups.size === 1) {
      const [group] = groups.values();
      if (group.length <= MAX_BATCH) {
        this.settle([group]).catch(() => {});
        return;
      }
    }
    const calls = new Map<string, Waiter[][]>();
    for (const group of groups.values()) {
      for (let i = 0; i < group.length; i += MAX_BATCH) {
        const part = group.length <= MAX_BATCH ? group : group.slice(i, i + MAX_BATCH);
        const key = this.shareKey(part[0]);
        const list = calls.get(key);
        if (list) list.push(part);
        else calls.set(key, [part]);
      }
    }
    this.client.batch(() => {
      for (const list of calls.values()) {
        // Whole groups, at most MAX_BATCH requests a call. Each waiter already got any failure: nothing else waits on the call.
        let call: Waiter[][] = [];
        let size = 0;
        for (const part of list) {
          if (size + part.length > MAX_BATCH && call.length > 0) {
            this.settle(call).catch(() => {});
            call = [];
            size = 0;
          }
          call.push(part);
          size += part.length;
        }
        this.settle(call).catch(() => {});
      }
    });
  };

  /** Which groups may share a script call: one mode and script (and test time); on a Cluster, one slot. */
  private shareKey(waiter: Waiter): string {
    const { request, now } = waiter;
    // A settle carries its own marker key and window: a call of its own.
    if (request.mode === 'settle') return `settle#${this.nextSettle++}`;
    let known = this.shareKeys.get(request.limits);
    let key = known?.[request.mode];
    if (key === undefined) {
      let script = this.scriptNames.get(request.limits);
      if (script === undefined) this.scriptNames.set(request.limits, (script = scriptFor(request.limits).name));
      key = `${request.mode}${script}`;
      if (known === undefined) this.shareKeys.set(request.limits, (known = {}));
      known[request.mode] = key;
    }
    if (now !== undefined) key = `${key}@${now}`;
    return this.client.cluster ? `${key}#${slotOf(request.keys[0])}` : key;
  }

  /**
   * One call for the groups, within `budgetMs`; each waiter gets its own result, or its subject's
   * own script error (FG_STORE_SCRIPT: that waiter's alone), or the call's error. Rejects when the call failed.
   */
  private settle(groups: Waiter[][], budgetMs = this.timeoutMs): Promise<void> {
    return this.send(groups, requestOf, groups[0][0].now, budgetMs).then(
      (results) => {
        let at = 0;
        for (const batch of groups) {
          for (let i = 0; i < batch.length; i++) {
            const entry = results[at++];
            if (entry instanceof FloodgateError) batch[i].reject(entry);
            else batch[i].resolve(entry);
          }
        }
      },
      (error: unknown) => {
        // A timed-out call may still be answered: each waiter's timeout carries its own late result.
        let at = 0;
        for (const batch of groups) {
          for (const w of batch) {
            const index = at++;
            w.reject(error instanceof StoreTimeout ? (error as StoreTimeout<ReplyEntry[]>).part((results) => own(results[index])) : error);
          }
        }
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
  private dispatch(key: string, batch: Waiter[], budgetMs = this.timeoutMs): void {
    this.settle([batch], budgetMs).then(
      () => this.next(key),
      (error: unknown) => {
        // Requests queued behind a failed call were never sent: fail them now rather than send
        // them to a store that just failed (the failure policy answers them at once).
        const queued = this.batches.get(key);
        this.batches.delete(key);
        // Never sent, so never answered late. Behind a call that timed out they are busy, not
        // failing (FG_STORE_OVERLOADED): the breaker counts them only if the store answered nothing
        // meanwhile (failure/guard.ts), and the limiter decides them locally.
        const unsent = error instanceof StoreTimeout ? this.busy("the request waited behind its subject's call in flight, which timed out") : error;
        if (queued) for (const w of queued) w.reject(unsent);
      },
    );
  }

  /**
   * 'in-flight': the subject's call returned; the requests queued behind it go next, each call
   * within what is left of its oldest request's deadline (counted from when that request was made,
   * not from this send), so no request waits past its deadline behind a chain of calls. A batch
   * whose oldest request has no time left is never sent: busy, not failing (FG_STORE_OVERLOADED),
   * and the limiter decides it locally.
   */
  private next(key: string): void {
    const queued = this.batches.get(key);
    while (queued && queued.length > 0) {
      const batch = queued.splice(0, MAX_BATCH);
      const left = batch[0].madeAt! + this.timeoutMs - performance.now();
      if (left > 0) {
        this.dispatch(key, batch, left);
        return;
      }
      const busy = this.busy("the request waited behind its subject's call in flight (coalesce: 'in-flight')");
      for (const w of batch) w.reject(busy);
    }
    this.batches.delete(key);
  }

  /**
   * One script call for groups of requests (each group on the same keys and limits; groups on the
   * same mode and script); one result per request, in order.
   * With `maxInFlight` calls in flight it waits here (never on Redis) for one of them to end, within
   * its deadline; a call still waiting at its deadline is never sent and fails FG_STORE_OVERLOADED.
   * Past the deadline a sent call rejects with a StoreTimeout whose `late` is its results if Redis
   * answers after all; it counts as in flight until Redis answers or the call fails.
   */
  private send<T>(groups: readonly (readonly T[])[], requestOfItem: (item: T) => StoreRequest, now: number | undefined, budgetMs = this.timeoutMs): Promise<ReplyEntry[]> {
    let call: ScriptCall;
    try {
      call = encodeGroupsOf(groups, requestOfItem, now);
    } catch (error) {
      return Promise.reject(error);
    }
    this.scriptStats.calls++;
    this.scriptStats.requests += call.requestCount;
    const lane = this.laneOf(call);
    if (lane.tryTake()) return this.start(call, budgetMs, lane);
    return new Promise((resolve, reject) => {
      lane.wait(
        budgetMs,
        (budgetMs) => resolve(this.start(call, budgetMs, lane)),
        () => reject(this.overloaded()),
      );
    });
  }

  /** The lane of the node the call goes to (see `lanes`). */
  private laneOf(call: ScriptCall): InFlightLane {
    const node = this.client.nodeOf && call.keys.length > 0 ? (this.client.nodeOf(slotOf(call.keys[0])) ?? '') : '';
    let lane = this.lanes.get(node);
    if (lane) return lane;
    // Nodes come and go with a Cluster's topology: past a Cluster's worth of lanes, drop the idle ones.
    if (this.lanes.size >= MAX_LANES) for (const [key, l] of this.lanes) if (l.idle) this.lanes.delete(key);
    this.lanes.set(node, (lane = new InFlightLane(this.maxInFlight)));
    return lane;
  }

  /** Sends one call now, its place in `lane` taken, bounded by what is left of its deadline. */
  private start(call: ScriptCall, budgetMs: number, lane: InFlightLane): Promise<ReplyEntry[]> {
    const deadline = { expired: false };
    const answered = runScript(this.client.send, call, () => deadline.expired).then(
      (reply) => {
        if (!this.memoryChecked) this.checkMemoryPolicy();
        return parseReply(reply, call);
      },
      (error: unknown) => explainRefusal(error, call.keys),
    );
    answered.then(lane.release, lane.release);
    return withDeadline(answered, budgetMs, 'Redis', () => {
      deadline.expired = true;
    });
  }

  /** A call refused past `maxInFlight` on its node. */
  private overloaded(): FloodgateError {
    return this.busy(`the call waited behind the ${this.maxInFlight} calls in flight on its node (maxInFlight)`);
  }

  /**
   * FG_STORE_OVERLOADED for a request that waited `why` until its deadline and was never sent: busy,
   * not failing (failure/guard.ts). Made by the hundreds under a flood: without a stack (errors.ts withoutStack).
   */
  private busy(why: string): FloodgateError {
    return withoutStack(() => new FloodgateError('FG_STORE_OVERLOADED', `Redis did not answer within ${this.timeoutMs} ms: ${why}, and was not sent.`));
  }

  /**
   * One fleet announcement (failure/fleet.ts), by Redis's clock: the ZSET at `key` scores each
   * instance with the Redis-clock ms its announcement expires; this one's is set, expired ones are
   * removed, the rest counted, and the key expires with the last announcement. Plain commands, not
   * a script: a decision's EVALSHA is never shared with it, and the ACL rule lists each
   * (stores/redis-acl.ts). Not atomic, and need not be: each instance counts itself at least, and
   * a race only shifts a count by one announcement until the next period. Bounded by one period.
   */
  async announce(key: string, member: string, ttlMs: number): Promise<number> {
    this.checkConnection();
    const keyed = this.client.keyed;
    if (!keyed) throw new FloodgateError('FG_STORE_UNAVAILABLE', 'The Redis client has no way to send a plain command.');
    const bound = Math.min(this.announceMs, 5_000);
    const now = redisTimeMs(await withDeadline(keyed(key, ['TIME']), bound, 'Redis TIME'));
    const sent = [
      keyed(key, ['ZADD', key, String(now + ttlMs), member]),
      keyed(key, ['ZREMRANGEBYSCORE', key, '-inf', String(now)]),
      keyed(key, ['ZCARD', key]),
      keyed(key, ['PEXPIRE', key, String(ttlMs)]),
    ];
    const replies = await withDeadline(Promise.all(sent), bound, 'Redis fleet announcement');
    return Number(replies[2]);
  }

  /**
   * One record in the fleet's configurations hash (failure/fleet.ts), by Redis's clock: the field
   * `member` holds `<expiry ms>|<member>|<value>` (HVALS, not HGETALL: the ACL rule grants no read of
   * a limiter key's fields); the expired records this call sees are deleted (a dead
   * instance's record leaves within one period of its expiry), and the hash expires with the last
   * record. Plain commands, named by the ACL rule. Bounded by one period.
   */
  async peers(key: string, member: string, value: string, ttlMs: number): Promise<readonly string[]> {
    this.checkConnection();
    const keyed = this.client.keyed;
    if (!keyed) throw new FloodgateError('FG_STORE_UNAVAILABLE', 'The Redis client has no way to send a plain command.');
    const bound = Math.min(this.announceMs, 5_000);
    const now = redisTimeMs(await withDeadline(keyed(key, ['TIME']), bound, 'Redis TIME'));
    const sent = [keyed(key, ['HSET', key, member, `${now + ttlMs}|${member}|${value}`]), keyed(key, ['PEXPIRE', key, String(ttlMs)]), keyed(key, ['HVALS', key])];
    const replies = await withDeadline(Promise.all(sent), bound, 'Redis fleet configurations');
    const records = Array.isArray(replies[2]) ? (replies[2] as unknown[]).map(String) : [];
    const live: string[] = [];
    const dead: string[] = [];
    for (const record of records) {
      const [expiry, field, ...rest] = record.split('|');
      if (Number(expiry) > now) live.push(rest.join('|'));
      else if (field) dead.push(field);
    }
    if (dead.length > 0) void keyed(key, ['HDEL', key, ...dead]).catch(() => undefined);
    return live;
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
