// RedisStore: every decision is one EVALSHA of one atomic script, on an ioredis Redis or Cluster (coalescing, client handling).
import { FloodgateError, invalidOption } from '../errors';
import { parseDuration } from '../duration';
import { checkOptionNames, optionNames } from '../validate';
import { withDeadline } from '../deadline';
import { encodeCall, parseReply, runScript, type SendCommand } from './redis-protocol';
import type { Store, StoreRequest, StoreResult } from './store';

/**
 * What RedisStore uses of an ioredis `Redis` or `Cluster`, written out so that the published types
 * need no ioredis types (an app that only uses the memory store compiles without ioredis).
 */
export interface RedisClient {
  evalsha(sha: string, numKeys: number, ...keysAndArgs: (string | number)[]): Promise<unknown>;
  eval(script: string, numKeys: number, ...keysAndArgs: (string | number)[]): Promise<unknown>;
  del(...keys: string[]): Promise<number>;
  /** ioredis's connection status ('ready', 'reconnecting', 'end', ...). */
  readonly status?: string;
  once?(event: 'ready', listener: () => void): unknown;
  on?(event: 'ready', listener: () => void): unknown;
}

export interface RedisStoreOptions {
  /**
   * An ioredis `Redis` or `Cluster` client. Floodgate never closes it. Create it with
   * `autoResendUnfulfilledCommands: false`: otherwise ioredis sends a command again after a
   * reconnect, and a script Redis already ran counts twice (Floodgate warns at construction).
   * Keep a reconnecting `retryStrategy` (the default): a client that gives up never recovers.
   * Give the client an 'error' listener; ioredis prints unhandled connection errors otherwise.
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
   *   instead of one per request; an idle server sends each request alone, as before.
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

// Requests can share a call only when they name the same keys, limits and mode.
const limitIds = new WeakMap<object, number>();
let nextLimitId = 0;
function batchKey(request: StoreRequest, now: number | undefined): string {
  let id = limitIds.get(request.limits);
  if (id === undefined) limitIds.set(request.limits, (id = nextLimitId++));
  const keys = request.keys.length === 1 ? request.keys[0] : request.keys.join('|');
  // With a test clock, only requests made at the same test time share a call (one clock per call).
  return `${request.mode === 'peek' ? 'p' : 'c'}${id}${now === undefined ? '' : `@${now}`}|${keys}`;
}

/** Who wants to hear that a client is ready again (RedisStore.onReady), by client. */
const readyListeners = new WeakMap<RedisClient, Set<() => void>>();

const COALESCE_MODES: readonly CoalesceMode[] = ['turn', 'in-flight', false];

// ioredis statuses of a client that is still making its first connection: a command waits in the
// offline queue for it (bounded by timeoutMs). After the first 'ready', only 'ready' is sent.
const FIRST_CONNECT = new Set(['wait', 'connecting', 'connect']);

export class RedisStore implements Store {
  readonly name = 'redis';
  readonly timeoutMs: number;
  readonly warnings: readonly string[];
  private readonly client: RedisClient;
  /** The protocol's one seam to the client (stores/redis-protocol.ts). */
  private readonly sendCommand: SendCommand;
  private readonly testClock?: () => number;
  private everReady = false;
  private readonly coalesce: CoalesceMode;
  /** 'in-flight': subjects with a call in flight, and the requests waiting for it to return. */
  private readonly batches = new Map<string, Waiter[]>();
  /** 'turn': this turn's requests by subject, sent together when the turn ends. */
  private turn = new Map<string, Waiter[]>();
  private turnScheduled = false;

  constructor(options: RedisStoreOptions) {
    if (!options || typeof options !== 'object') invalidOption('RedisStore', options, 'an options object { client }');
    if (typeof (options as Partial<RedisClient>).evalsha === 'function') {
      invalidOption('RedisStore', 'a Redis client', 'an options object: new RedisStore({ client })');
    }
    checkOptionNames('RedisStore options', options, REDIS_STORE_OPTION_NAMES);
    const client = options.client as Partial<RedisClient> | undefined;
    if (!client || typeof client.evalsha !== 'function' || typeof client.eval !== 'function') {
      invalidOption('client', options.client, 'an ioredis Redis or Cluster instance');
    }
    this.client = options.client;
    this.sendCommand = ioredisCommands(options.client);
    this.timeoutMs = parseDuration('timeoutMs', options.timeoutMs ?? 100, 1, 60_000);
    if (options.UNSAFE_testClock !== undefined && typeof options.UNSAFE_testClock !== 'function') {
      invalidOption('UNSAFE_testClock', options.UNSAFE_testClock, 'a function returning ms');
    }
    this.testClock = options.UNSAFE_testClock;
    if (options.coalesce !== undefined && !COALESCE_MODES.includes(options.coalesce)) {
      invalidOption('coalesce', options.coalesce, "'turn' (the default), 'in-flight' or false");
    }
    this.coalesce = options.coalesce ?? 'turn';
    this.warnings = clientWarnings(options.client);
    // The public 'ready' event, not a private field: once connected, a command is sent only on a
    // ready connection, never parked in the offline queue behind a reconnect.
    if (client!.status === 'ready' || typeof client!.once !== 'function') this.everReady = true;
    else client!.once('ready', () => (this.everReady = true));
  }

  onReady(listener: () => void): void {
    const client = this.client;
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

  /** 'turn': the event loop's turn is over; each subject's requests of it go in one call (at most MAX_BATCH). */
  private readonly endTurn = (): void => {
    this.turnScheduled = false;
    const groups = this.turn;
    this.turn = new Map();
    for (const group of groups.values()) {
      // Each waiter already got the failure; nothing else waits on the call.
      for (let i = 0; i < group.length; i += MAX_BATCH) this.settle(group.slice(i, i + MAX_BATCH)).catch(() => {});
    }
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
    const deadline = { expired: false };
    const reply = await withDeadline(
      runScript(this.sendCommand, call, () => deadline.expired),
      this.timeoutMs,
      'Redis',
      () => {
        deadline.expired = true;
      },
    );
    return parseReply(reply, call);
  }

  async reset(keys: readonly string[]): Promise<void> {
    this.checkConnection();
    // One DEL per key: on a Cluster all keys of a subject share a slot, but be safe across subjects.
    await withDeadline(Promise.all(keys.map((key) => this.client.del(key))), this.timeoutMs, 'Redis');
  }

  /** Fails at once, without queueing, when the connection cannot answer now. */
  private checkConnection(): void {
    const status = (this.client as { status?: string }).status;
    if (status === undefined || status === 'ready') return;
    if (!this.everReady && FIRST_CONNECT.has(status)) return;
    throw new FloodgateError('FG_STORE_UNAVAILABLE', `Redis connection is ${status}.`);
  }
}

/** The ioredis binding of the protocol's seam: its own evalsha and eval, which a Cluster routes by the key. */
function ioredisCommands(client: RedisClient): SendCommand {
  return (command, args) => (command === 'EVALSHA' ? client.evalsha(...args) : client.eval(...args));
}

/** What in the client's own configuration can count one request twice. Read from its public `options`. */
function clientWarnings(client: RedisClient): string[] {
  const own = (client as { options?: { autoResendUnfulfilledCommands?: boolean; redisOptions?: { autoResendUnfulfilledCommands?: boolean } } }).options;
  if (!own) return [];
  // A Cluster keeps its per-node connection options under redisOptions.
  const resend = own.redisOptions ? own.redisOptions.autoResendUnfulfilledCommands : own.autoResendUnfulfilledCommands;
  if (resend === false) return [];
  return [
    'RedisStore: the ioredis client resends unanswered commands after a reconnect ' +
      '(autoResendUnfulfilledCommands is not false), so a script Redis already ran before the ' +
      'connection dropped can run twice and count one request twice. Create the client with ' +
      '{ autoResendUnfulfilledCommands: false } (see docs/failure-modes.md).',
  ];
}
