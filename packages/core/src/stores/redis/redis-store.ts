// RedisStore: every decision is one EVALSHA of one atomic script, on an ioredis, iovalkey, node-redis or Valkey GLIDE client or cluster (the store's face: options, evaluate, fleet commands).
import { FloodgateError, invalidOption } from '../../base/errors';
import { parseDuration } from '../../base/duration';
import { checkOptionNames, clockOption, optionNames, leaseToken, refundAt, wholeNumber } from '../../base/validate';
import { StoreTimeout, withDeadline } from '../../base/deadline';
import { bindClient, isIoredis, isNodeRedis, type ClientBinding, type RedisClient } from './clients';
import { httpBinding, isHttpRedis, type HttpRedisClient } from './http-client';
import type { ReplyEntry } from './protocol';
import { DEFAULT_ANNOUNCE_MS, type Store, type StoreRequest, type StoreResult, type StoreSink } from '../store';
import { Coalescer } from './coalescer';
import { checkMemoryPolicy, type MemoryPolicy } from './memory-policy';
import { first, ScriptSender } from './sender';

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
   * - Redis over HTTP: `new Redis({ url, token, retry: false })` from `@upstash/redis` (for edge
   *   runtimes without TCP); a turn's script calls leave in one `/pipeline` request (docs/edge.md).
   * Give the client an 'error' listener: ioredis prints unhandled connection errors, and node-redis
   * without one ends the process (Floodgate warns at construction).
   * Production setups (TLS, ACL users, Sentinel, Cluster): docs/production-redis.md.
   */
  client: RedisClient | HttpRedisClient;
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
   * - 'turn' (default, but on Workers): requests made in the same turn of the event loop go together in one call,
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
   * - false: one script call per request. The default on Cloudflare Workers, where a call shared
   *   by two invocations would leave one waiting on the other's subrequest (docs/edge.md).
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

/** Default `maxInFlight`: see docs/failure-modes.md#bounded-load. */
export const DEFAULT_MAX_IN_FLIGHT = 256;

const COALESCE_MODES: readonly CoalesceMode[] = ['turn', 'in-flight', false];

const CLIENTS = 'an ioredis (or iovalkey) Redis or Cluster, a node-redis createClient(), createCluster() or createSentinel() client, a Valkey GLIDE GlideClient or GlideClusterClient, or an HTTP client such as @upstash/redis';

/** Cloudflare Workers (workerd), by the user agent it documents for exactly this check. */
const onWorkers = (): boolean => (globalThis as { navigator?: { userAgent?: unknown } }).navigator?.userAgent === 'Cloudflare-Workers';

/** The request itself, as the one item of its one group (coalesce: false). */
const itself = (request: StoreRequest): StoreRequest => request;

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

/**
 * The Redis store's face: options, evaluate (coalesced by coalescer.ts, sent by sender.ts), the
 * memory-policy check (memory-policy.ts), the fleet's plain commands, reset.
 */
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
  memoryPolicy: MemoryPolicy | undefined;
  private readonly warningList: string[];
  private readonly warningListeners = new Set<(warning: string) => void>();
  private memoryChecked = false;
  /** The client bound to the protocol's one seam (stores/redis/protocol.ts). */
  private readonly client: ClientBinding;
  /** The app's client itself, for its public 'ready' event (ioredis and node-redis both emit it). */
  private readonly raw: { on?(event: 'ready', listener: () => void): unknown };
  private readonly testClock?: () => number;
  /** Requests grouped into shared calls ('turn', 'in-flight'); undefined for coalesce: false. */
  private readonly coalescer: Coalescer | undefined;
  /** Sends the script calls, at most `maxInFlight` in flight per Redis node (sender.ts). */
  private readonly sender: ScriptSender;
  readonly maxInFlight: number;
  readonly announceMs: number;
  /** Script calls sent and the requests they carried: requests / calls is the coalescing batch size. */
  readonly scriptStats: { calls: number; requests: number };

  constructor(options: RedisStoreOptions) {
    if (!options || typeof options !== 'object') invalidOption('RedisStore', options, 'an options object { client }');
    if (isIoredis(options) || isNodeRedis(options)) {
      invalidOption('RedisStore', options, 'an options object: new RedisStore({ client })');
    }
    checkOptionNames('RedisStore options', options, REDIS_STORE_OPTION_NAMES);
    // An HTTP client first: it has evalsha and eval too (keys as an array), which ioredis's shape would claim.
    const client = isHttpRedis(options.client) ? httpBinding(options.client) : bindClient(options.client);
    if (!client) invalidOption('client', options.client, CLIENTS);
    this.client = client;
    this.raw = options.client as RedisStore['raw'];
    this.timeoutMs = parseDuration('timeoutMs', options.timeoutMs ?? 100, 1, 60_000);
    this.testClock = clockOption('UNSAFE_testClock', options.UNSAFE_testClock);
    if (options.coalesce !== undefined && !COALESCE_MODES.includes(options.coalesce)) {
      invalidOption('coalesce', options.coalesce, "'turn' (the default), 'in-flight' or false");
    }
    this.maxInFlight = wholeNumber('maxInFlight', options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT, 1, 1_000_000);
    this.announceMs = parseDuration('announceMs', options.announceMs ?? DEFAULT_ANNOUNCE_MS, 100, 600_000);
    this.sender = new ScriptSender(client, this.timeoutMs, this.maxInFlight, this.afterAnswer);
    this.scriptStats = this.sender.scriptStats;
    // On Workers a promise belongs to the request that made it: a call shared by two invocations
    // leaves one waiting on the other's subrequest (29 of 3200 failed closed in
    // tests/edge/test/redis-http-worker.test.ts), so there each request sends its own call.
    const coalesce = options.coalesce ?? (onWorkers() ? false : 'turn');
    this.coalescer = coalesce === false ? undefined : new Coalescer(coalesce, client, this.sender, this.timeoutMs);
    this.warningList = [...client.warnings];
    this.warnings = this.warningList;
  }

  /** Calls `listener` with each warning found after construction (the limiter logs it once). */
  onWarning(listener: (warning: string) => void): void {
    this.warningListeners.add(listener);
  }

  /** Once, after the first answer: does this Redis evict keys when full? (memory-policy.ts) */
  private readonly afterAnswer = (): void => {
    if (this.memoryChecked) return;
    this.memoryChecked = true;
    checkMemoryPolicy(
      this.client.command,
      (policy) => (this.memoryPolicy = policy),
      (warning) => this.warn(warning),
    );
  };

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
      this.admissible(request);
    } catch (error) {
      return Promise.reject(error);
    }
    // The test clock is read when the request is made, so a batch never moves a request in time.
    const now = this.testClock ? Math.floor(this.testClock()) : undefined;
    if (this.coalescer) return this.coalescer.add(request, now);
    return this.sendAlone(request, now);
  }

  /** `evaluate`, told to `sink` (Store.evaluateTo): a coalesced request's waiter tells it where its promise would settle. */
  evaluateTo(request: StoreRequest, sink: StoreSink): void {
    try {
      this.admissible(request);
    } catch (error) {
      sink.failed(error);
      return;
    }
    const now = this.testClock ? Math.floor(this.testClock()) : undefined;
    if (this.coalescer) this.coalescer.addTo(request, now, sink);
    else this.sendAlone(request, now).then((result) => sink.answered(result), (error: unknown) => sink.failed(error));
  }

  /** Throws for a request that must not be sent: a bad refund or settle (before it could share, and fail, a coalesced call), or no connection now. */
  private admissible(request: StoreRequest): void {
    if (request.mode === 'refund' || request.mode === 'settle') refundAt(request.at);
    if (request.mode === 'settle') leaseToken(request.token);
    this.checkConnection();
  }

  /** coalesce: false: the request in a call of its own. */
  private sendAlone(request: StoreRequest, now: number | undefined): Promise<StoreResult> {
    return this.sender.send([[request]], itself, now).then(first, (error: unknown) => {
      throw error instanceof StoreTimeout ? (error as StoreTimeout<ReplyEntry[]>).part(first) : error;
    });
  }

  /**
   * One fleet announcement (failure/fleet-count.ts), by Redis's clock: the ZSET at `key` scores each
   * instance with the Redis-clock ms its announcement expires; this one's is set, expired ones are
   * removed, the rest counted, and the key expires with the last announcement. Plain commands, not
   * a script: a decision's EVALSHA is never shared with it, and the ACL rule lists each
   * (stores/redis/acl.ts). Not atomic, and need not be: each instance counts itself at least, and
   * a race only shifts a count by one announcement until the next period. Bounded by one period.
   */
  async announce(key: string, member: string, ttlMs: number): Promise<number> {
    this.checkConnection();
    const keyed = this.client.keyed;
    if (!keyed) throw new FloodgateError('FG_STORE_UNAVAILABLE', 'The Redis client has no way to send a plain command.');
    const bound = Math.min(this.announceMs, 5_000);
    const now = redisTimeMs(await withDeadline(keyed(key, ['TIME']), bound, 'Redis TIME'));
    // The app may have closed the client while TIME was out (a script's `await client.quit()` after
    // its last decision): nothing more is written to a connection on its way out.
    this.checkConnection();
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
   * One record in the fleet's configurations hash (failure/fleet-count.ts), by Redis's clock: the field
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

  /**
   * Writes a subject's override (lua/main.lua's Override reads it): one `SET key value PX ttlMs`, so
   * it expires by itself, by Redis's clock. Then its record in the prefix's index, a ZSET scored by
   * the Redis-clock ms the override ends (members '<field>|<record>'), pruned of ended records and
   * expiring with the last one: plain commands like the fleet's (the index only lists; decisions
   * never read it). Bounded by the store's deadline.
   */
  async putOverride(key: string, value: string, ttlMs: number, index: { key: string; field: string; record: string }): Promise<void> {
    const keyed = this.keyedOrFail();
    const bound = Math.max(this.timeoutMs, 1000);
    await withDeadline(keyed(key, ['SET', key, value, 'PX', String(ttlMs)]), bound, 'Redis override');
    const now = redisTimeMs(await withDeadline(keyed(index.key, ['TIME']), bound, 'Redis TIME'));
    await this.dropRecords(index.key, index.field, now);
    await withDeadline(
      Promise.all([
        keyed(index.key, ['ZADD', index.key, String(now + ttlMs), `${index.field}|${index.record}`]),
        keyed(index.key, ['PEXPIRE', index.key, String(ttlMs), 'NX']),
        keyed(index.key, ['PEXPIRE', index.key, String(ttlMs), 'GT']),
      ]),
      bound,
      'Redis override index',
    );
  }

  /** Deletes a subject's override and its index record. */
  async dropOverride(key: string, index: { key: string; field: string }): Promise<void> {
    const keyed = this.keyedOrFail();
    await withDeadline(keyed(key, ['DEL', key]), Math.max(this.timeoutMs, 1000), 'Redis override');
    await this.dropRecords(index.key, index.field, 0);
  }

  /** The index's records whose override has not ended (by Redis's clock). */
  async listOverrides(indexKey: string): Promise<string[]> {
    const keyed = this.keyedOrFail();
    const bound = Math.max(this.timeoutMs, 1000);
    const now = redisTimeMs(await withDeadline(keyed(indexKey, ['TIME']), bound, 'Redis TIME'));
    const members = await withDeadline(keyed(indexKey, ['ZRANGEBYSCORE', indexKey, `(${now}`, '+inf']), bound, 'Redis override index');
    return (Array.isArray(members) ? members.map(String) : []).map((m) => m.slice(m.indexOf('|') + 1));
  }

  /** Removes the index's records of `field`, and every record ended by `now`. */
  private async dropRecords(indexKey: string, field: string, now: number): Promise<void> {
    const keyed = this.keyedOrFail();
    const bound = Math.max(this.timeoutMs, 1000);
    const members = await withDeadline(keyed(indexKey, ['ZRANGE', indexKey, '0', '-1']), bound, 'Redis override index');
    const mine = (Array.isArray(members) ? members.map(String) : []).filter((m) => m.startsWith(`${field}|`));
    const sent: Promise<unknown>[] = [];
    if (mine.length > 0) sent.push(keyed(indexKey, ['ZREM', indexKey, ...mine]));
    if (now > 0) sent.push(keyed(indexKey, ['ZREMRANGEBYSCORE', indexKey, '-inf', String(now)]));
    await withDeadline(Promise.all(sent), bound, 'Redis override index');
  }

  /** A broad override: one field of the hash at `key`, with its end by Redis's clock; the hash expires with its last field. */
  async putBroad(key: string, field: string, value: Record<string, unknown>, ttlMs: number): Promise<void> {
    const keyed = this.keyedOrFail();
    const bound = Math.max(this.timeoutMs, 1000);
    const now = redisTimeMs(await withDeadline(keyed(key, ['TIME']), bound, 'Redis TIME'));
    await withDeadline(keyed(key, ['HSET', key, field, JSON.stringify({ ...value, until: now + ttlMs })]), bound, 'Redis broad override');
    await withDeadline(Promise.all([keyed(key, ['PEXPIRE', key, String(ttlMs), 'NX']), keyed(key, ['PEXPIRE', key, String(ttlMs), 'GT'])]), bound, 'Redis broad override');
  }

  async dropBroad(key: string, field: string): Promise<void> {
    await withDeadline(this.keyedOrFail()(key, ['HDEL', key, field]), Math.max(this.timeoutMs, 1000), 'Redis broad override');
  }

  /** Every broad override and Redis's clock: what each instance polls. */
  async readBroad(key: string): Promise<{ now: number; fields: Record<string, string> }> {
    const keyed = this.keyedOrFail();
    const bound = Math.max(this.timeoutMs, 1000);
    // HVALS, never HGETALL (the ACL rule grants none: it would read a limiter key's fields); each value names its scope.
    const [time, values] = await withDeadline(Promise.all([keyed(key, ['TIME']), keyed(key, ['HVALS', key])]), bound, 'Redis broad override');
    const fields: Record<string, string> = {};
    if (Array.isArray(values)) values.forEach((v, i) => (fields[String(i)] = String(v)));
    return { now: redisTimeMs(time), fields };
  }

  private keyedOrFail(): (key: string, args: string[]) => Promise<unknown> {
    this.checkConnection();
    const keyed = this.client.keyed;
    if (!keyed) throw new FloodgateError('FG_STORE_UNAVAILABLE', 'The Redis client has no way to send a plain command.');
    return keyed;
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
