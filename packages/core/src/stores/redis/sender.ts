// One script call to Redis: a place in its node's in-flight lane (maxInFlight), within its deadline; a refusal explained.
import { FloodgateError, withoutStack } from '../../base/errors';
import { StoreTimeout } from '../../base/deadline';
import { monotonicSource } from '../../base/monotonic';
import { nextTurn } from '../../base/next-turn';
import type { StoreRequest, StoreResult } from '../store';
import type { ClientBinding } from './clients';
import { DeadlineList, type Timed } from './deadlines';
import { InFlightLane } from './in-flight';
import { encodeGroupsOf, evalArgs, parseReply, type ReplyEntry, type ScriptCall } from './protocol';
import { explainRefusal } from './refusals';
import { slotOf } from './slot';

/** A request's entry of its call's reply as its answer: its result, or its subject's own script error thrown (FG_STORE_SCRIPT). */
export const own = (entry: ReplyEntry): StoreResult => {
  if (entry instanceof FloodgateError) throw entry;
  return entry;
};
export const first = (results: ReplyEntry[]): StoreResult => own(results[0]);

/** Lanes kept before idle ones are dropped: more than any Cluster's masters a store talks to at once. */
const MAX_LANES = 64;

/**
 * Sends the script calls of one RedisStore: at most `maxInFlight` in flight per Redis node (on a
 * Cluster one lane per master, by the client's own slot map, so a node that is slow or paused does
 * not hold up the calls to the others; one lane for a single server, Sentinel's master, and clients
 * whose slot map is not known).
 */
export class ScriptSender {
  /** Script calls sent and the requests they carried: requests / calls is the coalescing batch size. */
  readonly scriptStats = { calls: 0, requests: 0 };
  private readonly lanes = new Map<string, InFlightLane>();
  /** The one lane of a client that shows no slot map (see laneOf). */
  private soleLane: InFlightLane | undefined = undefined;
  /** The monotonic clock, kept (base/monotonic.ts): read once a call. */
  private readonly perf = monotonicSource();
  /** The deadlines of the calls sent and not answered yet: one timer for all (deadlines.ts). */
  readonly deadlines = new DeadlineList();

  constructor(
    readonly client: ClientBinding,
    private readonly timeoutMs: number,
    private readonly maxInFlight: number,
    /** Told after each answer (the store's memory-policy check runs after the first). */
    readonly onAnswer: () => void,
  ) {}

  /**
   * One script call for groups of requests (each group on the same keys and limits; groups on the
   * same mode and script); one result per request, in order.
   * With `maxInFlight` calls in flight it waits here (never on Redis) for one of them to end, within
   * its deadline; a call still waiting at its deadline is never sent and fails FG_STORE_OVERLOADED.
   * Past the deadline a sent call rejects with a StoreTimeout whose `late` is its results if Redis
   * answers after all; it counts as in flight until Redis answers or the call fails.
   */
  send<T>(groups: readonly (readonly T[])[], requestOfItem: (item: T) => StoreRequest, now: number | undefined, budgetMs = this.timeoutMs): Promise<ReplyEntry[]> {
    const sink = new PromiseSink();
    filling = sink;
    const promise = new Promise<ReplyEntry[]>(fill);
    filling = undefined;
    this.dispatch(groups, requestOfItem, now, budgetMs, sink);
    return promise;
  }

  /** `send`, its outcome told to `sink` (no promise of its own): what the coalescer's calls use. */
  dispatch<T>(groups: readonly (readonly T[])[], requestOfItem: (item: T) => StoreRequest, now: number | undefined, budgetMs: number, sink: CallSink): void {
    let call: ScriptCall;
    try {
      call = encodeGroupsOf(groups, requestOfItem, now);
    } catch (error) {
      sink.failed(error);
      return;
    }
    this.scriptStats.calls++;
    this.scriptStats.requests += call.requestCount;
    const lane = this.laneOf(call);
    if (lane.tryTake()) {
      this.start(call, budgetMs, lane, sink);
      return;
    }
    lane.wait(
      budgetMs,
      (budgetMs) => this.start(call, budgetMs, lane, sink),
      () => sink.failed(this.overloaded()),
    );
  }

  /** The lane of the node the call goes to (see `lanes`). */
  private laneOf(call: ScriptCall): InFlightLane {
    // A client without a slot map (a single server, Sentinel's master) has one lane, kept in a field: no map lookup per call.
    if (!this.client.nodeOf) return (this.soleLane ??= new InFlightLane(this.maxInFlight));
    const node = call.keys.length > 0 ? (this.client.nodeOf(slotOf(call.keys[0])) ?? '') : '';
    let lane = this.lanes.get(node);
    if (lane) return lane;
    // Nodes come and go with a Cluster's topology: past a Cluster's worth of lanes, drop the idle ones.
    if (this.lanes.size >= MAX_LANES) for (const [key, l] of this.lanes) if (l.idle) this.lanes.delete(key);
    this.lanes.set(node, (lane = new InFlightLane(this.maxInFlight)));
    return lane;
  }

  /** Sends one call now, its place in `lane` taken, bounded by what is left of its deadline. */
  private start(call: ScriptCall, budgetMs: number, lane: InFlightLane, sink: CallSink): void {
    const sent = new SentCall(this, call, lane, budgetMs, this.perf.now() + budgetMs, sink);
    this.deadlines.add(sent);
    sent.send('EVALSHA');
  }

  /** A call refused past `maxInFlight` on its node. */
  private overloaded(): FloodgateError {
    return this.busy(`the call waited behind the ${this.maxInFlight} calls in flight on its node (maxInFlight)`);
  }

  /**
   * FG_STORE_OVERLOADED for a request that waited `why` until its deadline and was never sent: busy,
   * not failing (failure/guard.ts). Made by the hundreds under a flood: without a stack (errors.ts withoutStack).
   */
  busy(why: string): FloodgateError {
    return withoutStack(() => new FloodgateError('FG_STORE_OVERLOADED', `Redis did not answer within ${this.timeoutMs} ms: ${why}, and was not sent.`));
  }
}

/** Who hears how a script call ended: its results, or its error (Redis's refusal, FG_STORE_TIMEOUT, FG_STORE_OVERLOADED). Told once. */
export interface CallSink {
  answered(results: ReplyEntry[]): void;
  failed(error: unknown): void;
}

/** A call's outcome as a promise (`ScriptSender.send`). */
class PromiseSink implements CallSink {
  resolve: (results: ReplyEntry[]) => void = ignore;
  reject: (error: unknown) => void = ignore;
  answered(results: ReplyEntry[]): void {
    this.resolve(results);
  }
  failed(error: unknown): void {
    this.reject(error);
  }
}

/** The sink whose promise `new Promise(fill)` is making: its executor runs at once, so no executor closure per call. */
let filling: PromiseSink | undefined;
const fill = (resolve: (results: ReplyEntry[]) => void, reject: (error: unknown) => void): void => {
  filling!.resolve = resolve;
  filling!.reject = reject;
};

const WAITING = 0;
const ANSWERED = 1;
const EXPIRED = 2;

/**
 * One script call sent to Redis: EVALSHA, and on NOSCRIPT only (before its deadline) EVAL once,
 * which also loads the script; never sent again otherwise. Its promise settles with the parsed
 * reply, Redis's refusal (explained), or, past its deadline and one more turn of the event loop
 * (so that a reply already read off the socket wins), FG_STORE_TIMEOUT whose `late` settles with
 * the answer if it ever comes. It holds its place in its lane until Redis answers or the call
 * fails, late answers included.
 */
class SentCall implements Timed {
  prev: Timed | undefined = undefined;
  next: Timed | undefined = undefined;
  listed = false;
  private phase = WAITING;
  private retried = false;
  private lateResolve: (results: ReplyEntry[]) => void = ignore;
  private lateReject: (error: unknown) => void = ignore;

  constructor(
    private readonly sender: ScriptSender,
    private readonly call: ScriptCall,
    private readonly lane: InFlightLane,
    private readonly budgetMs: number,
    public until: number,
    private readonly sink: CallSink,
  ) {}

  send(command: 'EVALSHA' | 'EVAL'): void {
    let reply: Promise<unknown>;
    try {
      const call = this.call;
      reply = this.sender.client.send(command, command === 'EVALSHA' ? (call.shaArgs ?? evalArgs(call, call.script.sha)) : evalArgs(call, call.script.source));
    } catch (error) {
      reply = Promise.reject(error);
    }
    reply.then(this.answered, this.refused);
  }

  private readonly answered = (reply: unknown): void => {
    this.ended();
    this.sender.onAnswer();
    let results: ReplyEntry[];
    try {
      results = parseReply(reply, this.call);
    } catch (error) {
      this.failed(error);
      return;
    }
    if (this.phase === WAITING) {
      this.phase = ANSWERED;
      this.sink.answered(results);
    } else this.lateResolve(results);
  };

  private readonly refused = (error: unknown): void => {
    if (!this.retried && this.phase !== EXPIRED && error instanceof Error && error.message.startsWith('NOSCRIPT')) {
      // Redis lost its scripts (a restart, SCRIPT FLUSH): EVAL loads it again. Once, and never past the deadline.
      this.retried = true;
      this.send('EVAL');
      return;
    }
    this.ended();
    let explained: unknown;
    try {
      explainRefusal(error, this.call.keys);
    } catch (thrown) {
      explained = thrown;
    }
    this.failed(explained);
  };

  private failed(error: unknown): void {
    if (this.phase === WAITING) {
      this.phase = ANSWERED;
      this.sink.failed(error);
    } else this.lateReject(error);
  }

  /** Redis answered or the call failed: its deadline and its place in the lane are free. */
  private ended(): void {
    this.sender.deadlines.remove(this);
    this.lane.release();
  }

  /** Its deadline passed (deadlines.ts): one more turn for a reply already read, then FG_STORE_TIMEOUT. */
  expire(): void {
    nextTurn(() => this.timedOut());
  }

  private timedOut(): void {
    if (this.phase !== WAITING) return;
    this.phase = EXPIRED;
    const late = new Promise<ReplyEntry[]>((resolve, reject) => {
      this.lateResolve = resolve;
      this.lateReject = reject;
    });
    // Made by the hundreds under a flood, in a timer callback: no stack (errors.ts withoutStack).
    this.sink.failed(withoutStack(() => new StoreTimeout('Redis', this.budgetMs, late)));
  }
}

const ignore = (): void => undefined;
