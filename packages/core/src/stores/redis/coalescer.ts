// Coalescing for RedisStore: requests that can share a script call go in one ('turn': those of one event-loop turn; 'in-flight': those behind their subject's call in flight).
import { FloodgateError } from '../../base/errors';
import { StoreTimeout } from '../../base/deadline';
import { nextTurn } from '../../base/next-turn';
import type { StoreRequest, StoreResult, StoreSink } from '../store';
import type { ClientBinding } from './clients';
import { scriptFor, type ReplyEntry } from './protocol';
import { own, type CallSink, type ScriptSender } from './sender';
import { slotOf } from './slot';

/** A request waiting for its call, with its promise's two ends, or the sink told instead (Store.evaluateTo). One object per request, one shape. */
class Waiter {
  resolve: (result: StoreResult) => void = ignoreResult;
  reject: (error: unknown) => void = ignoreResult;
  /** 'in-flight': performance.now() when the request was made; its deadline runs from then, however long it waited for the call ahead. */
  madeAt: number | undefined = undefined;
  constructor(
    readonly request: StoreRequest,
    /** The test clock when the request was made (UNSAFE_testClock only). */
    readonly now: number | undefined,
    /** Told the outcome instead of a promise (undefined: `resolve` and `reject` are the promise's). */
    readonly sink: StoreSink | undefined,
  ) {}

  /** Its result. */
  ok(result: StoreResult): void {
    if (this.sink) this.sink.answered(result);
    else this.resolve(result);
  }

  /** Its error. */
  fail(error: unknown): void {
    if (this.sink) this.sink.failed(error);
    else this.reject(error);
  }
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

/** What encodeGroups reads of a group's items: a waiter's request (one function, not one per call). */
const requestOf = (waiter: Waiter): StoreRequest => waiter.request;

/** Memoised per keys array (a subject's, kept by its limiter): its batch key for consumes without a test clock, with the limits it was made for. */
interface KeysInfo {
  readonly limits: object;
  readonly consumeKey: string;
}

/** No waiter: the turn's first group between turns (replaced, never pushed to: a push needs the turn's key). */
const NO_WAITERS: Waiter[] = [];

/** Most requests sent in one coalesced call, of one subject or several; the rest go in the next one, so no one script holds Redis long. */
const MAX_BATCH = 64;

/** Groups a store's requests into shared script calls, by its `coalesce` mode ('turn' or 'in-flight'). */
export class Coalescer {
  /** 'in-flight': subjects with a call in flight, and the requests waiting for it to return. */
  private readonly batches = new Map<string, Waiter[]>();
  /**
   * 'turn': this turn's requests by batch key, sent together when the turn ends. The first key's
   * group is held in two fields, and a map is made only when a second key comes in the same turn:
   * a turn of one subject (one connection, a hot caller) makes no map, no map entry and no iterator.
   */
  private turnKey: string | undefined = undefined;
  private turnGroup: Waiter[] = NO_WAITERS;
  /** The turn's groups by key, the first key's first; undefined while the turn has one key. */
  private turn: Map<string, Waiter[]> | undefined = undefined;
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

  constructor(
    private readonly mode: 'turn' | 'in-flight',
    private readonly client: ClientBinding,
    private readonly sender: ScriptSender,
    private readonly timeoutMs: number,
  ) {}

  /** The request's answer, from the call it shares with the others that can share it. */
  add(request: StoreRequest, now: number | undefined): Promise<StoreResult> {
    const waiter = new Waiter(request, now, undefined);
    const promise = promiseOf(waiter);
    this.enter(waiter);
    return promise;
  }

  /** `add`, the outcome told to `sink` (Store.evaluateTo): no promise. */
  addTo(request: StoreRequest, now: number | undefined, sink: StoreSink): void {
    this.enter(new Waiter(request, now, sink));
  }

  private enter(waiter: Waiter): void {
    const { request, now } = waiter;
    const key = this.batchKey(request, now);
    if (this.mode === 'turn') {
      this.addToTurn(key, waiter);
      return;
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
        waiter.fail(error); // as when dispatch ran inside the promise's executor
      }
    }
  }

  /** 'turn': the waiter joins its key's group of this turn; the first request of a turn schedules its end. */
  private addToTurn(key: string, waiter: Waiter): void {
    if (this.turnKey === undefined) {
      this.turnKey = key;
      this.turnGroup = [waiter];
      nextTurn(this.endTurn);
    } else if (key === this.turnKey) {
      this.turnGroup.push(waiter);
    } else {
      // A second key this turn: the map, the first key's group first (calls keep the turn's order).
      const turn = (this.turn ??= new Map([[this.turnKey, this.turnGroup]]));
      const group = turn.get(key);
      if (group) group.push(waiter);
      else turn.set(key, [waiter]);
    }
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
    const first = this.turnGroup;
    const firstKey = this.turnKey!;
    // A new map for a turn of several keys, never one kept and cleared: a map that lives long sits
    // in the old generation, and what a turn puts in it (its table, the groups) would then be
    // promoted by every scavenge instead of dying young (about 280 bytes a request more promoted,
    // measured with node --trace-gc-nvp: more mark-compacts).
    const several = this.turn;
    this.turnKey = undefined;
    this.turnGroup = NO_WAITERS;
    this.turn = undefined;
    // One subject (the common case under one hot caller): one call, nothing to sort.
    if (several === undefined && first.length <= MAX_BATCH) {
      this.call([first]);
      return;
    }
    const groups = several ?? new Map([[firstKey, first]]);
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
            this.call(call);
            call = [];
            size = 0;
          }
          call.push(part);
          size += part.length;
        }
        this.call(call);
      }
    });
  };

  /** One call of this turn for the groups: each waiter hears its own result or error (a CallTurn, no promise of the call's own). */
  private call(groups: Waiter[][]): void {
    this.sender.dispatch(groups, requestOf, groups[0][0].now, this.timeoutMs, new TurnCall(groups));
  }

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
  private answer(groups: Waiter[][], budgetMs = this.timeoutMs): Promise<void> {
    return this.sender.send(groups, requestOf, groups[0][0].now, budgetMs).then(
      (results) => answerAll(groups, results),
      (error: unknown) => {
        failAll(groups, error);
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
    this.answer([batch], budgetMs).then(
      () => this.next(key),
      (error: unknown) => {
        // Requests queued behind a failed call were never sent: fail them now rather than send
        // them to a store that just failed (the failure policy answers them at once).
        const queued = this.batches.get(key);
        this.batches.delete(key);
        // Never sent, so never answered late. Behind a call that timed out they are busy, not
        // failing (FG_STORE_OVERLOADED): the breaker counts them only if the store answered nothing
        // meanwhile (failure/guard.ts), and the limiter decides them locally.
        const unsent = error instanceof StoreTimeout ? this.sender.busy("the request waited behind its subject's call in flight, which timed out") : error;
        if (queued) for (const w of queued) w.fail(unsent);
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
      const busy = this.sender.busy("the request waited behind its subject's call in flight (coalesce: 'in-flight')");
      for (const w of batch) w.fail(busy);
    }
    this.batches.delete(key);
  }
}

/** Each waiter of a call's groups gets its own result, or its subject's own script error (FG_STORE_SCRIPT: that waiter's alone). */
function answerAll(groups: readonly Waiter[][], results: ReplyEntry[]): void {
  let at = 0;
  for (const batch of groups) {
    for (let i = 0; i < batch.length; i++) {
      const entry = results[at++];
      if (entry instanceof FloodgateError) batch[i].fail(entry);
      else batch[i].ok(entry);
    }
  }
}

/** Each waiter of a failed call gets its error; a timed-out call may still be answered: each waiter's timeout carries its own late result. */
function failAll(groups: readonly Waiter[][], error: unknown): void {
  let at = 0;
  for (const batch of groups) {
    for (const w of batch) {
      const index = at++;
      w.fail(error instanceof StoreTimeout ? (error as StoreTimeout<ReplyEntry[]>).part((results) => own(results[index])) : error);
    }
  }
}

/** A 'turn' call's groups, told its outcome by the sender (sender.ts CallSink). */
class TurnCall implements CallSink {
  constructor(private readonly groups: readonly Waiter[][]) {}
  answered(results: ReplyEntry[]): void {
    answerAll(this.groups, results);
  }
  failed(error: unknown): void {
    failAll(this.groups, error);
  }
}
