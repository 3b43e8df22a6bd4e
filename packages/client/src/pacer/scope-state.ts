// What one scope (by default one origin) knows: each policy/partition's quota, a Retry-After block, requests in flight.
import type { QuotaUnit } from '../parse';
import { newAnchorState, type AnchorState } from './anchor';

/** One policy in one partition, as the latest response that spoke of it left it. */
export interface QuotaState {
  readonly policy: string;
  readonly partition?: string;
  unit: QuotaUnit;
  limit?: number;
  /** Units left when the server answered request #observedSeq; undefined when only the policy was sent. */
  remaining?: number;
  /** When quota comes back, on the pacer's clock; undefined when unknown. */
  resetAt?: number;
  /** The request whose response set `remaining`: requests sent after it were not yet counted in it. */
  observedSeq: number;
  /**
   * Its reset passed and one request went to learn what is left: `remaining` is that one request's
   * allowance, not the server's word. A response that no longer speaks of the policy drops it.
   */
  probing?: boolean;
  /** `resetAt` is the start of a whole Unix second the server named (QuotaObservation.resetStartMs), not its end. */
  fromSecondStart?: boolean;
  /** `resetAt` came from the scope's anchor model (anchor.ts), sooner than the end of the second named. */
  anchored?: boolean;
}

/** Policies and partitions kept per scope at most; past it the one heard of longest ago goes. */
export const MAX_QUOTAS_PER_SCOPE = 64;

/** A request admitted to go out, holding its place among those in flight until its response is settled. */
export interface Ticket {
  readonly scope: string;
  readonly seq: number;
  /** When it was admitted, on the pacer's clock. */
  readonly sentAt: number;
  settled: boolean;
}

/**
 * What a server that sends only Retry-After taught: `admitted` requests went through in the run that
 * ended in a 429, from `firstAt` until the Retry-After's end. From it a least spacing between sends
 * (Pacer.learn says how).
 */
export interface LearnedRate {
  admitted: number;
  firstAt: number | undefined;
  /** Least time between two sends of the scope, in ms, as learned (0: nothing learned yet); it wears off from `decayFrom`. */
  spacingMs: number;
  /** The first normal answer after the lesson, on the pacer's clock: the spacing halves every learnedHalfLifeMs from it. */
  decayFrom: number | undefined;
  /** The last request sent when the lesson was learned: only an answer to a later one wears it off. */
  lessonSeq: number;
  lastSentAt: number;
}

export class ScopeState {
  readonly quotas = new Map<string, QuotaState>();
  /** Until when a Retry-After holds every request of this scope, on the pacer's clock. */
  blockedUntil = 0;
  blockedStatus: number | undefined;
  /** The last request sent when the block was set: a normal answer to a later one lifts it. */
  blockedSeq = 0;
  /**
   * A request sent when a reset read as the start of its Unix second had passed was refused: this
   * server rounds its resets down, and from now on they are read as the end of the second they name.
   */
  resetsRoundedDown = false;
  /** What this scope learned of a reset tied to its own requests (anchor.ts); used once resetsRoundedDown. */
  readonly anchor: AnchorState = newAnchorState();
  /** Calls in acquire() for this scope now: a scope with any, or with requests in flight, is never let go. */
  waiting = 0;
  /** Sequence numbers of the requests in flight, in the order they were sent. */
  readonly inFlight = new Set<number>();
  seq = 0;
  readonly learned: LearnedRate = { admitted: 0, firstAt: undefined, spacingMs: 0, decayFrom: undefined, lessonSeq: 0, lastSentAt: -Infinity };
  private readonly waiters = new Set<() => void>();

  constructor(readonly name: string) {}

  /** Requests in flight that were sent after request #seq: the ones a response to #seq did not count. */
  inFlightAfter(seq: number): number {
    let n = 0;
    for (const s of this.inFlight) if (s > seq) n++;
    return n;
  }

  /** The smallest concurrency quota any policy of this scope advertises (`qu="concurrent-requests"`). */
  concurrencyLimit(): { limit: number; policy: string } | undefined {
    let best: { limit: number; policy: string } | undefined;
    for (const q of this.quotas.values()) {
      if (q.unit !== 'concurrent-requests' || q.limit === undefined) continue;
      if (!best || q.limit < best.limit) best = { limit: q.limit, policy: q.policy };
    }
    return best;
  }

  /** Whether letting this state go loses nothing a caller is using: no request in flight, no call waiting. */
  idle(): boolean {
    return this.inFlight.size === 0 && this.waiting === 0;
  }

  /** Wakes everything waiting for this scope to change (a response settled, a request given up). */
  notify(): void {
    const all = [...this.waiters];
    this.waiters.clear();
    for (const wake of all) wake();
  }

  onChange(wake: () => void): () => void {
    this.waiters.add(wake);
    return () => this.waiters.delete(wake);
  }
}
