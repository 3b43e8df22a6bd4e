// The pacer: state per scope and per policy/partition, waits before the limit, Retry-After before a retry.
import { RateLimitWaitError, type WaitReason } from '../errors';
import { resolvePacingOptions, type PacingOptions, type ResolvedPacingOptions } from '../options';
import { parseRateLimit, type HeaderSource, type ProblemInfo, type RateLimitInfo } from '../parse';
import { learnAnchor } from './anchor';
import { pause } from './pause';
import { MAX_QUOTAS_PER_SCOPE, ScopeState, type QuotaState, type Ticket } from './scope-state';

/** What must pass before the next request of a scope may go. */
interface Hold {
  /** A moment on the pacer's clock to wait for (before jitter), or undefined: only a change can help. */
  until?: number;
  /** false for a spacing the client learned itself: jitter is for moments a server names. */
  jitter?: boolean;
  /** Whether a response or a request given up could lift the hold before `until`. */
  change: boolean;
  reason: WaitReason;
  policy?: string;
  status?: number;
}

/** A call's waiting budget: it may not wait past `deadline` (the pacer's clock). */
export interface WaitBudget {
  readonly deadline: number;
  readonly signal?: AbortSignal;
}

/** One response, as the entry points hand it to the pacer. */
export interface SettledResponse {
  readonly status: number;
  readonly method: string;
  readonly headers: HeaderSource;
  /** The problem+json body's fields, when the entry point read them (429 and 503 only). */
  readonly problem?: ProblemInfo;
  /** Retries this call already made. */
  readonly attempt: number;
  /** false: this call may not be retried whatever the response. */
  readonly retryAllowed?: boolean;
}

/** A copy of one scope's state, for tests, logs and the playground. */
export interface ScopeSnapshot {
  readonly scope: string;
  readonly inFlight: number;
  /** Ms until a Retry-After block ends (0: none). */
  readonly blockedForMs: number;
  /** The least time between sends learned from a server that sends only Retry-After (0: none). */
  readonly learnedSpacingMs: number;
  readonly quotas: readonly {
    policy: string;
    partition?: string;
    unit: string;
    limit?: number;
    remaining?: number;
    resetInMs?: number;
  }[];
}

/** An answer that says the request was taken (2xx, 3xx). */
const normal = (status: number) => status >= 200 && status < 400;

/** A wait for a quota's reset draws jitter up to this fraction of itself (and jitterMs at most). */
export const QUOTA_JITTER_FRACTION = 0.1;

/**
 * The most jitter a wait may draw: jitterMs for a Retry-After, and for a quota's reset at most a
 * tenth of the wait. Jitter spreads callers told the same moment; a reset seconds away still spreads
 * them over jitterMs, but against a sliding window whose next unit is 200 ms away (the ms Floodgate
 * sends, issue #46) a client waits once per unit, and 125 ms of jitter on average per 200 ms wait
 * cost it more than the 1.3x of the fastest that issue #46 allows (docs/client.md).
 */
function jitterCap(jitterMs: number, hold: Hold, t: number): number {
  if (hold.reason !== 'quota' || hold.until === undefined) return jitterMs;
  return Math.min(jitterMs, Math.floor(Math.max(0, hold.until - t) * QUOTA_JITTER_FRACTION));
}

/** The policy name a spacing learned from Retry-After goes by, in wait events and errors. */
export const LEARNED_POLICY = '(learned from Retry-After)';

/** How many of the oldest scopes one eviction looks at for one that nothing is using. */
const EVICTION_SCAN = 64;

const keyOf = (policy: string, partition: string | undefined) => `${policy}\u0000${partition ?? ''}`;

/**
 * The state one client keeps. pacedFetch and floodgatePacing each make one from options; hand the
 * same Pacer to several of them (a fetch wrapper and an undici Agent, say) to share what they learn.
 */
export class Pacer {
  readonly options: ResolvedPacingOptions;
  private readonly scopes = new Map<string, ScopeState>();

  constructor(options: PacingOptions = {}) {
    this.options = resolvePacingOptions(options);
  }

  /** The scope a URL belongs to (the `scope` option; by default its origin). */
  scopeOf(url: URL): string {
    return this.options.scope(url);
  }

  /** How many scopes the pacer holds state for now (at most `maxScopes`, plus any with calls under way). */
  get scopeCount(): number {
    return this.scopes.size;
  }

  /** A scope's state, made when first needed and moved to the most recently used end. */
  private state(scope: string): ScopeState {
    let s = this.scopes.get(scope);
    if (s) {
      this.scopes.delete(scope);
      this.scopes.set(scope, s);
      return s;
    }
    s = new ScopeState(scope);
    this.scopes.set(scope, s);
    if (this.scopes.size > this.options.maxScopes) this.evict(s);
    return s;
  }

  /**
   * Lets go of the scope used longest ago that nothing is using (no request in flight, no call
   * waiting: their state must stay the one their answer settles). A scope let go forgets its
   * Retry-After and quotas: its next request goes and its answer teaches them again, one request,
   * never a loop. Looks at the oldest few only, so a burst of busy scopes costs a bounded scan and
   * may keep the map over its bound until they are done.
   */
  private evict(keep: ScopeState): void {
    let looked = 0;
    for (const [name, s] of this.scopes) {
      if (looked++ >= EVICTION_SCAN) return;
      if (s === keep || !s.idle()) continue;
      this.scopes.delete(name);
      if (this.scopes.size <= this.options.maxScopes) return;
    }
  }

  /** A deadline for a call starting now, `maxWaitMs` from now (the call's own, else the pacer's). */
  budget(maxWaitMs: number | undefined, signal?: AbortSignal): WaitBudget {
    return { deadline: this.options.now() + (maxWaitMs ?? this.options.maxWaitMs), signal };
  }

  /**
   * Waits until a request of `scope` may go, then admits it: a Retry-After block has passed, every
   * quota of the scope has a unit left once the requests already in flight are counted (else its
   * reset has passed, plus jitter), and a concurrency quota has a free slot. Throws
   * RateLimitWaitError at once when the wait would pass the budget's deadline, and the signal's
   * reason when it aborts.
   */
  async acquire(scope: string, budget: WaitBudget): Promise<Ticket> {
    const s = this.state(scope);
    // Held while this call waits, so that the state it waits on is not let go under it.
    s.waiting++;
    try {
      return await this.admit(s, scope, budget);
    } finally {
      s.waiting--;
    }
  }

  private async admit(s: ScopeState, scope: string, budget: WaitBudget): Promise<Ticket> {
    const { now, random, jitterMs, onWait } = this.options;
    // One jitter per call and per moment waited for: re-checks after a wake-up do not draw again.
    let jitterFor: number | undefined;
    let jitter = 0;
    let reported: string | undefined;
    for (;;) {
      const t = now();
      const hold = this.hold(s, t);
      if (!hold) break;
      let waitMs = Infinity;
      if (hold.until !== undefined) {
        if (jitterFor !== hold.until) {
          jitterFor = hold.until;
          const cap = jitterCap(jitterMs, hold, t);
          jitter = cap > 0 && hold.jitter !== false ? Math.floor(random() * (cap + 1)) : 0;
        }
        waitMs = Math.max(0, hold.until - t) + jitter;
      }
      const left = budget.deadline - t;
      if (waitMs > left && !(hold.change && left > 0)) {
        throw new RateLimitWaitError({ waitMs, budgetMs: left, scope, reason: hold.reason, policy: hold.policy, status: hold.status });
      }
      const key = `${hold.reason}:${hold.until}:${hold.policy}`;
      if (onWait && key !== reported) {
        reported = key;
        onWait({ scope, reason: hold.reason, waitMs, policy: hold.policy, status: hold.status });
      }
      await pause(Math.min(waitMs, left), s, hold.change, budget.signal);
      if (hold.change && now() >= budget.deadline && this.hold(s, now())) {
        const h = this.hold(s, now())!;
        throw new RateLimitWaitError({ waitMs: h.until !== undefined ? h.until - now() : Infinity, budgetMs: 0, scope, reason: h.reason, policy: h.policy, status: h.status });
      }
    }
    const seq = ++s.seq;
    s.inFlight.add(seq);
    const sentAt = now();
    s.learned.lastSentAt = sentAt;
    return { scope, seq, sentAt, settled: false };
  }

  /** The first thing that holds the next request of `s` back at time `t`, or undefined. */
  private hold(s: ScopeState, t: number): Hold | undefined {
    if (s.blockedUntil > t) return { until: s.blockedUntil, change: false, reason: 'retry-after', status: s.blockedStatus };
    let worst: Hold | undefined;
    for (const q of s.quotas.values()) {
      if (q.unit === 'concurrent-requests' || q.remaining === undefined) continue;
      if (q.resetAt !== undefined && t >= q.resetAt) {
        // Quota came back, but how much the draft does not say ("MUST NOT assume that all its service
        // limit will be fully restored": a sliding log frees one unit at its reset). One request goes
        // to find out; the others wait for its answer.
        q.remaining = 1;
        q.resetAt = undefined;
        q.observedSeq = s.seq;
        q.probing = true;
      }
      // Quotas in bytes are not spent by a request the client can count: only a 0 holds them back.
      const pending = q.unit === 'requests' ? s.inFlightAfter(q.observedSeq) : 0;
      if (q.remaining - pending > 0) continue;
      const change = pending > 0;
      // Nothing left and no reset known: the client cannot know when, so it sends and learns.
      if (q.resetAt === undefined && !change) continue;
      // A moment the anchor model worked out from this client's own requests is no other client's: no wave to spread.
      const hold: Hold = { until: q.resetAt, change, reason: 'quota', policy: q.policy, ...(q.anchored ? { jitter: false } : {}) };
      if (!worst || (hold.until ?? -1) > (worst.until ?? -1)) worst = hold;
    }
    if (worst) return worst;
    const spacingMs = this.spacing(s, t);
    const { lastSentAt } = s.learned;
    if (spacingMs > 0 && lastSentAt + spacingMs > t) return { until: lastSentAt + spacingMs, jitter: false, change: false, reason: 'quota', policy: LEARNED_POLICY };
    const cap = s.concurrencyLimit();
    if (cap && s.inFlight.size >= Math.max(1, cap.limit)) return { change: true, reason: 'concurrency', policy: cap.policy };
    return undefined;
  }

  /**
   * Records what a response says (quotas, Retry-After, violated policies), frees the request's place
   * in flight, and answers whether the call should be retried: a retryStatus (429, 503) that says
   * when (Retry-After, or a problem+json retry member), a retryable method, retries left. The retry's
   * wait is the next acquire's: the Retry-After now holds the whole scope.
   */
  settle(ticket: Ticket, response: SettledResponse, info: RateLimitInfo = parseRateLimit(response.headers)): boolean {
    const s = this.state(ticket.scope);
    const t = this.options.now();
    const limited = this.options.retryStatuses.has(response.status);
    if (response.status === 429) this.learnRounding(s, ticket);
    // Alone: the only request of the scope in flight is this one (release() below takes it out).
    const alone = s.inFlight.size === 1 && s.inFlight.has(ticket.seq);
    const anchoredAt = learnAnchor(s.anchor, { info, admitted: normal(response.status), sentAt: ticket.sentAt, answeredAt: t, alone });
    const heard = new Set<string>();
    for (const o of info.quotas) {
      const key = keyOf(o.policy, o.partition);
      heard.add(key);
      const known = s.quotas.get(key);
      // A response to an older request than the one that last spoke is stale (it came back late), but a
      // refusal is news whenever it comes.
      if (known && known.observedSeq > ticket.seq && !limited) continue;
      const q: QuotaState = known ?? { policy: o.policy, partition: o.partition, unit: o.unit, observedSeq: ticket.seq };
      q.unit = o.unit;
      if (o.limit !== undefined) q.limit = o.limit;
      if (o.remaining !== undefined) {
        q.remaining = o.remaining;
        // A whole Unix second: its start while this server has not been seen to round down (see learnRounding).
        q.fromSecondStart = o.resetStartMs !== undefined && !s.resetsRoundedDown;
        const resetMs = q.fromSecondStart ? o.resetStartMs : o.resetMs;
        q.resetAt = resetMs !== undefined ? t + Math.min(resetMs, this.options.maxHoldMs) : undefined;
        // A server seen to round down, whose reset follows one of this scope's requests by a time learned to the ms.
        q.anchored = s.resetsRoundedDown && anchoredAt !== undefined && q.resetAt !== undefined && anchoredAt < q.resetAt;
        if (q.anchored) q.resetAt = anchoredAt;
        q.observedSeq = Math.max(q.observedSeq, ticket.seq);
        q.probing = false;
      }
      // Most recently heard of last, so that the bound below lets go of the stalest.
      s.quotas.delete(key);
      s.quotas.set(key, q);
      if (s.quotas.size > MAX_QUOTAS_PER_SCOPE) s.quotas.delete(s.quotas.keys().next().value!);
    }
    // A probe's answer that no longer names its policy: the server stopped sending it, so it no
    // longer holds anything back (else the scope would go one request at a time for good).
    for (const [key, q] of s.quotas) if (q.probing && ticket.seq > q.observedSeq && !heard.has(key)) s.quotas.delete(key);
    for (const policy of response.problem?.violatedPolicies ?? []) {
      for (const q of s.quotas.values()) if (q.policy === policy && q.remaining !== undefined) q.remaining = 0;
    }
    const asked = info.retryAfterMs ?? response.problem?.retryAfterMs;
    // Believed up to maxHoldMs: past it one request goes to ask again.
    const retryAfterMs = asked === undefined ? undefined : Math.min(asked, this.options.maxHoldMs);
    if (limited && retryAfterMs !== undefined && t + retryAfterMs > s.blockedUntil) {
      s.blockedUntil = t + retryAfterMs;
      s.blockedStatus = response.status;
      s.blockedSeq = s.seq;
    } else if (normal(response.status) && ticket.seq > s.blockedSeq) {
      // Sent after the block was set, and answered: the server takes requests again.
      s.blockedUntil = 0;
    }
    if (info.quotas.length === 0) this.learn(s, ticket, response.status, limited && response.status === 429 ? retryAfterMs : undefined, t);
    this.release(ticket);
    return (
      limited &&
      retryAfterMs !== undefined &&
      response.retryAllowed !== false &&
      this.options.retryMethods.has(response.method.toUpperCase()) &&
      response.attempt < this.options.maxRetries
    );
  }

  /**
   * A reset in whole Unix seconds names a second, and servers round the moment into it up
   * (Floodgate, express-rate-limit: the moment is at or before the start of that second) or down
   * (koa-ratelimit: within it). The pacer first reads the start, the moment itself for the first
   * kind; a 429 to a request sent once such a reset had passed (its probe, or a later one) shows the
   * second kind, and the scope reads the end of the second from then on, as it did before issue #46.
   * One 429 per scope at most, and only against a server that rounds down.
   */
  private learnRounding(s: ScopeState, ticket: Ticket): void {
    // A request timed by the anchor model refused: the server is not what the model takes it for.
    for (const q of s.quotas.values()) if (q.anchored && ticket.seq > q.observedSeq) s.anchor.broken = true;
    if (s.resetsRoundedDown) return;
    for (const q of s.quotas.values()) {
      if (q.fromSecondStart && q.probing && ticket.seq > q.observedSeq) s.resetsRoundedDown = true;
    }
  }

  /**
   * A server that sends no quota fields tells the client its limit only by refusing: count the N
   * requests that went through since the last refusal and the time T from the first of them to the
   * end of the 429's Retry-After, and space later sends by 2T / (N - 1). T is all the client can see
   * of the window, and it can be short of it: a window that began before the first request, or a
   * sliding window whose boundary came soon, gives a short Retry-After; the margin of two, over one
   * unit fewer than went through, keeps a sliding-window-counter's refusal from coming back (it
   * admits at most N - 1 per window at a steady rate). A new lesson never lowers the spacing, but
   * the spacing is believed up to maxHoldMs, and it halves every learnedHalfLifeMs once the server
   * answers normally again (a server that lifted its limit, or lied once, is not paced for ever).
   */
  private learn(s: ScopeState, ticket: Ticket, status: number, retryAfterMs: number | undefined, t: number): void {
    const l = s.learned;
    if (normal(status)) {
      l.admitted++;
      if (l.firstAt === undefined || ticket.sentAt < l.firstAt) l.firstAt = ticket.sentAt;
      if (l.spacingMs > 0 && l.decayFrom === undefined && ticket.seq > l.lessonSeq) l.decayFrom = t;
      return;
    }
    if (retryAfterMs === undefined) return;
    if (l.admitted > 0 && l.firstAt !== undefined) {
      const lesson = (2 * (t + retryAfterMs - l.firstAt)) / Math.max(1, l.admitted - 1);
      l.spacingMs = Math.min(this.options.maxHoldMs, Math.max(this.spacing(s, t), lesson));
      l.decayFrom = undefined;
      l.lessonSeq = s.seq;
    }
    l.admitted = 0;
    l.firstAt = undefined;
  }

  /** The learned spacing at `t`: halved every learnedHalfLifeMs since the first normal answer after the lesson. */
  private spacing(s: ScopeState, t: number): number {
    const l = s.learned;
    if (l.spacingMs <= 0 || l.decayFrom === undefined || t <= l.decayFrom) return l.spacingMs;
    const ms = l.spacingMs * 2 ** (-(t - l.decayFrom) / this.options.learnedHalfLifeMs);
    if (ms >= 1) return ms;
    // Worn off: forget it, so that a later lesson starts from nothing.
    l.spacingMs = 0;
    l.decayFrom = undefined;
    return 0;
  }

  /** Frees a request's place without a response (it failed or was aborted): whatever it reserved comes back. */
  release(ticket: Ticket): void {
    if (ticket.settled) return;
    ticket.settled = true;
    const s = this.state(ticket.scope);
    s.inFlight.delete(ticket.seq);
    s.notify();
  }

  /** What the pacer knows of a scope now. */
  snapshot(scope: string): ScopeSnapshot {
    // Looking makes no state: a scope the pacer does not know (or let go) reads as a fresh one.
    const s = this.scopes.get(scope) ?? new ScopeState(scope);
    const t = this.options.now();
    return {
      scope,
      inFlight: s.inFlight.size,
      blockedForMs: Math.max(0, s.blockedUntil - t),
      learnedSpacingMs: this.spacing(s, t),
      quotas: [...s.quotas.values()].map((q) => ({
        policy: q.policy,
        ...(q.partition !== undefined ? { partition: q.partition } : {}),
        unit: q.unit,
        ...(q.limit !== undefined ? { limit: q.limit } : {}),
        ...(q.remaining !== undefined ? { remaining: Math.max(0, q.remaining - (q.unit === 'requests' ? s.inFlightAfter(q.observedSeq) : 0)) } : {}),
        ...(q.resetAt !== undefined ? { resetInMs: Math.max(0, q.resetAt - t) } : {}),
      })),
    };
  }
}

/**
 * A Pacer given in place of options, else a new one from the options. Recognised by shape, not only
 * by class: the CommonJS build of each entry (`@floodgate/client`, `@floodgate/client/undici`) holds
 * its own copy of the class, so a Pacer made by one fails `instanceof` in the other.
 */
export function pacerFrom(options: PacingOptions | Pacer | undefined): Pacer {
  if (options instanceof Pacer) return options;
  const o = options as Partial<Pacer> | undefined;
  if (o && typeof o.acquire === 'function' && typeof o.settle === 'function' && typeof o.release === 'function' && typeof o.budget === 'function') {
    return o as Pacer;
  }
  return new Pacer(options as PacingOptions | undefined);
}
