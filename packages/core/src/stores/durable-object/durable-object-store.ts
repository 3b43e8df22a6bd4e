// DurableObjectStore: a Store on Cloudflare Durable Objects, one object per shard of subjects (by the subject's hash tag), a turn's requests for one shard sent in one call through its stub.
import { FloodgateError, invalidOption, withoutStack } from '../../base/errors';
import { withDeadline } from '../../base/deadline';
import { parseDuration } from '../../base/duration';
import { checkOptionNames, clockOption, optionNames, wholeNumber } from '../../base/validate';
import type { Store, StoreRequest, StoreResult } from '../store';
import { MAX_WIRE_BATCH } from './durable-object';
import { encodeBatch, type WireAnswer } from './wire';

/** What the store uses of a Durable Object namespace binding (`env.FLOODGATE`), written out: no Workers types needed. */
export interface DurableObjectNamespaceLike {
  idFromName(name: string): unknown;
  get(id: never): { fetch(input: string, init?: { method?: string; body?: string; headers?: Record<string, string> }): Promise<{ ok: boolean; status: number; json(): Promise<unknown> }> };
}

export interface DurableObjectStoreOptions {
  /** The binding of FloodgateDurableObject (`env.FLOODGATE`). */
  namespace: DurableObjectNamespaceLike;
  /**
   * Objects the subjects are spread over, by their hash: one object decides all of a subject's
   * requests (exact), and each object takes its shard's share of the traffic. Changing it moves
   * subjects to other objects (their counts start again). A whole number from 1 to 1024. Default 16.
   */
  shards?: number;
  /** Object names are `${name}:${shard}`: another name, other objects. Default 'floodgate'. */
  name?: string;
  /**
   * Longest wait for one call, in ms (or a duration string); past it the call's requests fail
   * with FG_STORE_TIMEOUT (never retried: the object may have counted them) and the failure policy
   * decides them. Default 1000: an object can be on another continent than the Worker calling it.
   */
  timeoutMs?: number | string;
  /** TESTS ONLY: sent with each batch; honoured only by objects whose env sets FLOODGATE_UNSAFE_TEST_CLOCK='true'. */
  UNSAFE_testClock?: () => number;
}

const OPTION_NAMES = optionNames<DurableObjectStoreOptions>()(['namespace', 'shards', 'name', 'timeoutMs', 'UNSAFE_testClock']);

interface Waiter {
  readonly request: StoreRequest;
  resolve(result: StoreResult): void;
  reject(error: unknown): void;
}

/** The subject's hash tag (`{...}`, shared by all its keys), else the whole key: what picks its shard. */
function tagOf(key: string): string {
  const open = key.indexOf('{');
  const close = open < 0 ? -1 : key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : key;
}

/** FNV-1a over the tag's UTF-16 units: cheap, stable across runtimes, spread enough for a hex digest. */
function shardOf(key: string, shards: number): number {
  const tag = tagOf(key);
  let h = 0x811c9dc5;
  for (let i = 0; i < tag.length; i++) h = Math.imul(h ^ tag.charCodeAt(i), 0x01000193);
  return (h >>> 0) % shards;
}

const unavailable = (why: string): FloodgateError => withoutStack(() => new FloodgateError('FG_STORE_UNAVAILABLE', `Durable Object store: ${why}`));

/**
 * Each object runs the in-memory twins (FloodgateDurableObject), so decisions are MemoryStore's,
 * by the object's own clock. Requests one invocation makes together for one shard go in one call
 * (one subrequest per shard); a call that fails (the object unreachable, overloaded, reset)
 * rejects its requests, and the limiter's failure policy decides them, as for a Redis outage.
 * Each call is bounded by the store's `timeoutMs`.
 */
export class DurableObjectStore implements Store {
  readonly name = 'durable-object';
  readonly timeoutMs: number;
  private readonly namespace: DurableObjectNamespaceLike;
  private readonly shards: number;
  private readonly prefix: string;
  private readonly testClock: (() => number) | undefined;
  private readonly pending = new Map<number, Waiter[]>();
  private scheduled = false;
  /** Calls sent and the requests they carried: requests / calls is the coalescing batch size. */
  readonly scriptStats = { calls: 0, requests: 0 };

  constructor(options: DurableObjectStoreOptions) {
    if (!options || typeof options !== 'object') invalidOption('DurableObjectStore', options, 'an options object { namespace }');
    checkOptionNames('DurableObjectStore options', options, OPTION_NAMES);
    const ns = options.namespace as Partial<DurableObjectNamespaceLike> | undefined;
    if (!ns || typeof ns.idFromName !== 'function' || typeof ns.get !== 'function') {
      invalidOption('namespace', options.namespace, "a Durable Object namespace binding of FloodgateDurableObject, such as env.FLOODGATE");
    }
    this.namespace = options.namespace;
    this.shards = wholeNumber('shards', options.shards ?? 16, 1, 1024);
    if (options.name !== undefined && (typeof options.name !== 'string' || !/^[A-Za-z0-9_.-]{1,64}$/.test(options.name))) {
      invalidOption('name', options.name, 'a string matching [A-Za-z0-9_.-]{1,64}');
    }
    this.prefix = options.name ?? 'floodgate';
    this.timeoutMs = parseDuration('timeoutMs', options.timeoutMs ?? 1_000, 1, 60_000);
    this.testClock = clockOption('UNSAFE_testClock', options.UNSAFE_testClock);
  }

  evaluate(request: StoreRequest): Promise<StoreResult> {
    if (request.keys.length === 0) return Promise.reject(unavailable('a request without keys.'));
    const shard = shardOf(request.keys[0], this.shards);
    return new Promise((resolve, reject) => {
      const list = this.pending.get(shard);
      if (list) list.push({ request, resolve, reject });
      else this.pending.set(shard, [{ request, resolve, reject }]);
      if (!this.scheduled) {
        this.scheduled = true;
        // After this task's microtasks: the requests one invocation makes together go together, and
        // never another invocation's (workerd ties a promise to the request that made it: a batch
        // shared by two requests would leave one of them waiting on the other's subrequest).
        queueMicrotask(this.flush);
      }
    });
  }

  async reset(keys: readonly string[]): Promise<void> {
    const byShard = new Map<number, string[]>();
    for (const key of keys) {
      const shard = shardOf(key, this.shards);
      byShard.set(shard, [...(byShard.get(shard) ?? []), key]);
    }
    await Promise.all([...byShard].map(([shard, list]) => this.call(shard, encodeBatch({ requests: [], reset: list }))));
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    const batches = [...this.pending];
    this.pending.clear();
    for (const [shard, waiters] of batches) {
      for (let i = 0; i < waiters.length; i += MAX_WIRE_BATCH) void this.send(shard, waiters.slice(i, i + MAX_WIRE_BATCH));
    }
  };

  /** One call for one shard's waiters; each gets its own answer, or the call's failure. */
  private async send(shard: number, waiters: Waiter[]): Promise<void> {
    this.scriptStats.calls++;
    this.scriptStats.requests += waiters.length;
    try {
      const now = this.testClock ? Math.floor(this.testClock()) : undefined;
      const body = (await this.call(shard, encodeBatch({ requests: waiters.map((w) => w.request), ...(now === undefined ? {} : { now }) }))) as { answers?: WireAnswer[] };
      if (!Array.isArray(body?.answers) || body.answers.length !== waiters.length) throw unavailable('the object answered a batch of another size.');
      waiters.forEach((w, i) => {
        const answer = body.answers![i];
        if ('ok' in answer) w.resolve(answer.ok);
        else w.reject(withoutStack(() => new FloodgateError(answer.error.code, answer.error.message)));
      });
    } catch (error) {
      for (const w of waiters) w.reject(error);
    }
  }

  private async call(shard: number, body: string): Promise<unknown> {
    let response;
    try {
      const stub = this.namespace.get(this.namespace.idFromName(`${this.prefix}:${shard}`) as never);
      const sent = stub.fetch('https://floodgate.invalid/batch', { method: 'POST', body, headers: { 'content-type': 'application/json' } });
      response = await withDeadline(sent, this.timeoutMs, 'The Durable Object');
    } catch (error) {
      if ((error as { code?: unknown }).code === 'FG_STORE_TIMEOUT') throw error;
      throw unavailable(`the object did not answer (${error instanceof Error ? error.message : String(error)}).`);
    }
    if (!response.ok) throw unavailable(`the object answered HTTP ${response.status}.`);
    return withDeadline(response.json(), this.timeoutMs, 'The Durable Object');
  }
}
