// One script call to Redis: a place in its node's in-flight lane (maxInFlight), within its deadline; a refusal explained.
import { FloodgateError, withoutStack } from '../../base/errors';
import { withDeadline } from '../../base/deadline';
import type { StoreRequest, StoreResult } from '../store';
import type { ClientBinding } from './clients';
import { InFlightLane } from './in-flight';
import { encodeGroupsOf, parseReply, runScript, type ReplyEntry, type ScriptCall } from './protocol';
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

  constructor(
    private readonly client: ClientBinding,
    private readonly timeoutMs: number,
    private readonly maxInFlight: number,
    /** Told after each answer (the store's memory-policy check runs after the first). */
    private readonly onAnswer: () => void,
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
        this.onAnswer();
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
  busy(why: string): FloodgateError {
    return withoutStack(() => new FloodgateError('FG_STORE_OVERLOADED', `Redis did not answer within ${this.timeoutMs} ms: ${why}, and was not sent.`));
  }
}
