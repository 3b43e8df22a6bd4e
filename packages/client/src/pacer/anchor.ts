// A reset in whole Unix seconds rounded down, tied to one of the client's own requests: learn the offset, wait less than the whole second.
import type { RateLimitInfo } from '../parse';

/** The longest limit the model follows: it keeps one entry per request the server may still count. */
export const MAX_ANCHOR_LIMIT = 1000;

/**
 * What a scope learned of a server whose reset is a fixed time D after one of the client's requests:
 * the oldest the server still counts (a sliding log, as koa-ratelimit keeps; a window opened by the
 * first request of it, as many Redis INCR + EXPIRE limiters). Such a server's reset, rounded down to
 * a whole second, names a moment anywhere in that second: read to its end, a pacer waits up to a
 * second too long per window, and since its next request then opens the window just after a whole
 * second, nearly the whole second every time (issue #46: 1.46x the fastest against koa-ratelimit).
 * Every response bounds D: the moment lies in the second named, the request it is tied to reached the
 * server between its send and its answer. The bounds narrow as the phase of the requests moves.
 */
export interface AnchorState {
  /** Requests answered normally, oldest first, at most the limit: when each was sent and answered, on the pacer's clock. */
  readonly sends: { sentAt: number; answeredAt: number }[];
  /** D is at least this and at most hiMs (ms); -Infinity / Infinity while unknown. */
  loMs: number;
  hiMs: number;
  /** The responses contradicted the model, or a request it timed was refused: not used again for this scope. */
  broken: boolean;
}

export function newAnchorState(): AnchorState {
  return { sends: [], loMs: -Infinity, hiMs: Infinity, broken: false };
}

/** The response a scope's model learns from: its quota, whether it was admitted, when it was sent and answered. */
export interface AnchorResponse {
  readonly info: RateLimitInfo;
  readonly admitted: boolean;
  readonly sentAt: number;
  readonly answeredAt: number;
  /** No other request of the scope in flight: every earlier one answered, none later sent, so `sends` is the server's order. */
  readonly alone: boolean;
}

/**
 * Records one response and answers, when it leaves nothing, the moment by which the model says the
 * next unit is back: the oldest of the last `limit` requests reached the server by its answer, and D
 * is at most hiMs. Undefined when the model does not apply (several quotas, no whole Unix second,
 * requests overlapping, a broken or unlearned model, units left).
 */
export function learnAnchor(a: AnchorState, r: AnchorResponse): number | undefined {
  if (a.broken || r.info.quotas.length !== 1) return undefined;
  const o = r.info.quotas[0];
  if (o.unit !== 'requests' || o.limit === undefined || o.remaining === undefined || o.resetMs === undefined || o.resetStartMs === undefined) return undefined;
  if (!r.alone || o.limit < 1 || o.limit > MAX_ANCHOR_LIMIT || !Number.isInteger(o.limit)) return undefined;
  if (r.admitted) {
    a.sends.push({ sentAt: r.sentAt, answeredAt: r.answeredAt });
    while (a.sends.length > o.limit) a.sends.shift();
  }
  // The requests the server counts now: this one among them when admitted; the oldest is the anchor.
  const counted = o.limit - o.remaining;
  if (counted < 1 || counted > a.sends.length) return undefined;
  const anchor = a.sends[a.sends.length - counted];
  if (r.admitted) {
    // The moment is before the end of the second named (resetMs) and at or after its start.
    a.hiMs = Math.min(a.hiMs, r.answeredAt + o.resetMs - anchor.sentAt);
    if (o.resetStartMs > 0) a.loMs = Math.max(a.loMs, r.answeredAt + o.resetStartMs - anchor.answeredAt);
    if (a.loMs > a.hiMs) {
      a.broken = true;
      return undefined;
    }
  }
  if (o.remaining > 0 || !Number.isFinite(a.hiMs)) return undefined;
  return anchor.answeredAt + a.hiMs;
}
