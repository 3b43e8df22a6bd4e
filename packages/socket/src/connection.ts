// One socket's life under the limiter: the handshake's admission (identity, connection lease), then each message's decision in arrival order, with a bounded backlog.
import type { Decision, Identity } from '@floodgate/core';
import { forwardedClient } from '@floodgate/core/http';
import type { IncomingHttpHeaders } from 'node:http';
import { CONNECTIONS_SCOPE, MESSAGES_SCOPE, type LimitedEvent, type ResolvedSocketOptions } from './options';

/** What the handshake tells: the peer's address and the request headers. */
export interface Handshake {
  readonly address: string | undefined;
  readonly headers: IncomingHttpHeaders;
}

/** The handshake's answer: admitted with an identity (and a lease), or refused with a status. */
export type Admission =
  | { readonly allowed: true; readonly identity: Identity; readonly release: () => void }
  | { readonly allowed: false; readonly status: 401 | 429 | 503; readonly retryAfterMs: number; readonly reason: string; readonly identity?: Identity };

/** One message's answer. */
export interface Verdict {
  readonly allowed: boolean;
  readonly limit?: LimitedEvent['limit'];
  readonly retryAfterMs: number;
  readonly reason: string;
  /** The deciding limiter's decision (the identity's when both admitted). */
  readonly decision?: Decision;
}

const ALLOWED: Verdict = { allowed: true, retryAfterMs: 0, reason: 'allowed' };

/** The client IP: the peer's, or through listed proxies the right-most X-Forwarded-For hop that is not one of them. */
export function clientIp(o: ResolvedSocketOptions, handshake: Handshake): string | undefined {
  return o.trusted ? forwardedClient(handshake.address, handshake.headers['x-forwarded-for'], o.trusted) : handshake.address;
}

const refusedStatus = (d: Decision): 429 | 503 => (d.reason === 'fail-closed' || d.reason === 'shed' ? 503 : 429);

/** Identifies the caller as HTTP does, then takes a connection slot when `connections` is set. Never rejects. */
export async function admit(o: ResolvedSocketOptions, handshake: Handshake): Promise<Admission> {
  const trustProxy = o.trusted ? 'some' : 'none';
  let identity: Identity;
  let decision: Decision | undefined;
  try {
    identity = await o.identify({ ip: clientIp(o, handshake), headers: handshake.headers, method: 'GET', route: undefined, trustProxy });
    if (identity.rejected) return refuse(o, { allowed: false, status: 401, retryAfterMs: 0, reason: 'unknown-key', identity });
    if (o.connections) decision = await o.connections.consume(identity.subject, { scope: CONNECTIONS_SCOPE });
  } catch (error) {
    // A limiter resolves every limit; a throw here is a bug or a resolveKey the identity layer let through: refuse, never crash.
    o.logger.error?.(`@floodgate/socket: a handshake could not be decided, refused: ${String(error)}`);
    return refuse(o, { allowed: false, status: 503, retryAfterMs: 0, reason: 'error' });
  }
  if (decision && !decision.allowed) {
    return refuse(o, { allowed: false, status: refusedStatus(decision), retryAfterMs: Math.max(0, decision.retryAfterMs), reason: decision.reason, identity });
  }
  const lease = decision?.lease;
  return { allowed: true, identity, release: lease ? () => void lease.release() : () => undefined };
}

function refuse(o: ResolvedSocketOptions, a: Admission & { allowed: false }): Admission {
  o.onLimited?.({ kind: 'connection', status: a.status, retryAfterMs: a.retryAfterMs, reason: a.reason, identity: a.identity?.kind });
  return a;
}

let connections = 0;

/**
 * One connection: its messages decided one after another (so they are delivered in the order they
 * came), at most `maxPending` waiting; its per-connection count in this process's memory, its
 * identity's in the store. The only state it keeps is this object: memory per connection is bounded.
 */
export class SocketConnection {
  /** The per-connection limiter's subject: unique in this process, never reused. */
  private readonly id = `c${++connections}`;
  private tail: Promise<unknown>;
  private pending = 0;
  private closed = false;
  private admission: Admission | undefined;

  constructor(
    private readonly o: ResolvedSocketOptions,
    admission: Promise<Admission>,
  ) {
    this.tail = admission.then((a) => {
      this.admission = a;
      // Closed while the handshake was decided: the slot it took goes back at once.
      if (this.closed && a.allowed) a.release();
    });
  }

  /** The handshake's answer, once known. */
  get admitted(): Admission | undefined {
    return this.admission;
  }

  /**
   * Decides one message of `cost` (or of the cost `costOf` answers) and hands the verdict to
   * `deliver`, in arrival order. Nothing is delivered after `close`.
   */
  submit(costOf: () => unknown, deliver: (verdict: Verdict) => void): void {
    if (this.closed) return;
    if (this.pending >= this.o.maxPending) return deliver(this.refused({ allowed: false, limit: 'pending', retryAfterMs: 0, reason: 'pending' }));
    let cost: unknown;
    try {
      cost = costOf();
    } catch (error) {
      this.o.logger.warn(`@floodgate/socket: the cost function threw; the message is refused: ${String(error)}`);
      return deliver(this.refused({ allowed: false, limit: 'cost', retryAfterMs: 0, reason: 'invalid-cost' }));
    }
    this.pending++;
    // The app's handler runs inside this chain: its throw must not stop the messages after it, and
    // must surface as it would from a plain listener (an uncaught exception).
    const safely = (verdict: Verdict) => {
      try {
        deliver(verdict);
      } catch (error) {
        queueMicrotask(() => {
          throw error;
        });
      }
    };
    this.tail = this.tail
      .then(() => this.decide(cost))
      .then(
        (verdict) => {
          this.pending--;
          if (!this.closed && verdict) safely(verdict);
        },
        (error: unknown) => {
          this.pending--;
          this.o.logger.warn(`@floodgate/socket: a message could not be decided; it is refused: ${String(error)}`);
          if (!this.closed) safely(this.refused({ allowed: false, limit: 'cost', retryAfterMs: 0, reason: 'invalid-cost' }));
        },
      );
  }

  /** Frees the connection's slot and its per-connection count; idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.admission?.allowed) this.admission.release();
    if (this.o.perConnection) this.o.perConnection.reset(this.id).catch(() => undefined);
  }

  private async decide(cost: unknown): Promise<Verdict | undefined> {
    const a = this.admission;
    if (this.closed || !a?.allowed) return undefined;
    const { perConnection, messages } = this.o;
    let local: Decision | undefined;
    // Cheapest first: this connection's count is in memory, and a flood on one connection stops here.
    if (perConnection) {
      local = await perConnection.consume(this.id, { cost: cost as number });
      if (!local.allowed) return this.refused(verdictOf('connection', local));
    }
    if (!messages) return ALLOWED;
    const shared = await messages.consume(a.identity.subject, { cost: cost as number, scope: MESSAGES_SCOPE });
    if (shared.allowed) return { ...ALLOWED, decision: shared };
    // All-or-nothing: a message the identity's limit refuses takes nothing from the connection's.
    if (local?.at !== undefined) await perConnection!.refund(this.id, { cost: cost as number, at: local.at });
    return this.refused(verdictOf('identity', shared));
  }

  private refused(v: Verdict): Verdict {
    const identity = this.admission?.allowed ? this.admission.identity.kind : undefined;
    this.o.onLimited?.({ kind: 'message', limit: v.limit, retryAfterMs: v.retryAfterMs, reason: v.reason, identity });
    return v;
  }
}

function verdictOf(limit: 'connection' | 'identity', d: Decision): Verdict {
  return { allowed: false, limit, retryAfterMs: Math.max(0, d.retryAfterMs), reason: d.reason, decision: d };
}
