// socketIoLimiter: Floodgate for a Socket.IO (4.x) server: a namespace middleware that refuses the handshake over the open-connection limit and decides each event before its handler.
import type { IncomingHttpHeaders } from 'node:http';
import { invalidOption } from '@floodgate/core/http';
import { admit, SocketConnection, type Verdict } from './connection';
import { resolveSocketOptions, type SocketLimiterOptions } from './options';

/** The parts of a Socket.IO server-side `Socket` the limiter uses (typed by shape: no import of socket.io). */
export interface IoSocket {
  readonly handshake: { readonly address: string; readonly headers: IncomingHttpHeaders };
  readonly conn: { once(event: 'close', listener: () => void): unknown };
  use(fn: (packet: unknown[], next: (err?: Error) => void) => void): unknown;
  once(event: 'disconnect', listener: () => void): unknown;
  emit(event: string, ...args: unknown[]): unknown;
  disconnect(close?: boolean): unknown;
}

export interface SocketIoLimiterOptions extends SocketLimiterOptions {
  /** Units one event draws: a whole number, a cost per event name (others cost 1), or a function of the event and its arguments. Default 1. */
  cost?: number | Readonly<Record<string, number>> | ((event: string, args: readonly unknown[]) => number);
  /** The event a refused event is answered with (onLimit 'error', and before 'close'), unless it carried an acknowledgement, which gets the same object. Default 'rate-limited'. */
  errorEvent?: string;
}

/** The error a refused handshake passes to Socket.IO: the client's 'connect_error' gets its message and `data`. */
export interface RateLimitHandshakeError extends Error {
  readonly data: { readonly status: 401 | 429 | 503; readonly retryAfterMs: number; readonly reason: string };
}

export interface SocketIoLimiter {
  /** For `io.use(limiter.middleware)` (or a namespace's `use`): one per namespace a client connects to. */
  middleware(socket: IoSocket, next: (err?: Error) => void): void;
}

function costOf(cost: SocketIoLimiterOptions['cost']): (event: string, args: readonly unknown[]) => unknown {
  if (cost === undefined) return () => 1;
  if (typeof cost === 'function') return cost;
  const whole = (v: unknown) => typeof v === 'number' && Number.isInteger(v) && v >= 0;
  if (typeof cost === 'number') {
    if (!whole(cost)) invalidOption('cost', cost, 'a whole number from 0, a cost per event name, or a function');
    return () => cost;
  }
  if (!cost || typeof cost !== 'object' || Array.isArray(cost)) invalidOption('cost', cost, 'a whole number from 0, a cost per event name, or a function');
  for (const [name, value] of Object.entries(cost)) if (!whole(value)) invalidOption(`cost.${name}`, value, 'a whole number from 0');
  // A map without a prototype: an event named 'constructor' or '__proto__' costs 1, as any unnamed one.
  const table = new Map(Object.entries(cost));
  return (event) => table.get(event) ?? 1;
}

const refusal = (v: Verdict) => ({ type: 'rate-limited', limit: v.limit, retryAfterMs: v.retryAfterMs, reason: v.reason });

/**
 * Floodgate for a Socket.IO server.
 * @example
 * const limiter = socketIoLimiter({ store, messages: { limit: 50, windowMs: '10s' }, connections: { limit: 3 }, cost: { upload: 10 } });
 * io.use(limiter.middleware);
 */
export function socketIoLimiter(options: SocketIoLimiterOptions): SocketIoLimiter {
  const o = resolveSocketOptions(options, 'socketIoLimiter', ['cost', 'errorEvent']);
  const cost = costOf(options.cost);
  const errorEvent = options.errorEvent ?? 'rate-limited';
  if (typeof errorEvent !== 'string' || errorEvent.length === 0) invalidOption('errorEvent', errorEvent, 'a non-empty event name');

  function limited(socket: IoSocket, packet: unknown[], v: Verdict): void {
    if (o.onLimit === 'drop') return;
    const ack = packet[packet.length - 1];
    if (typeof ack === 'function') ack(refusal(v));
    else socket.emit(errorEvent, { ...refusal(v), event: typeof packet[0] === 'string' ? packet[0] : undefined });
    // After the admitted events before it: Socket.IO hands each to its handler on the next tick, and drops those a disconnect overtakes.
    if (o.onLimit === 'close') setImmediate(() => socket.disconnect(true));
  }

  return {
    middleware(socket, next) {
      const admission = admit(o, { address: socket.handshake.address, headers: socket.handshake.headers });
      const connection = new SocketConnection(o, admission);
      // The engine.io connection's end: every transport, and a client gone while the handshake was decided.
      socket.conn.once('close', () => connection.close());
      socket.once('disconnect', () => connection.close());
      void admission.then((a) => {
        if (!a.allowed) {
          const error = Object.assign(new Error(a.status === 429 ? 'rate limited' : a.status === 401 ? 'unauthorized' : 'unavailable'), {
            data: { status: a.status, retryAfterMs: a.retryAfterMs, reason: a.reason },
          });
          return next(error);
        }
        socket.use((packet, go) => {
          const event = typeof packet[0] === 'string' ? packet[0] : '';
          connection.submit(
            () => cost(event, packet.slice(1)),
            (v) => (v.allowed ? go() : limited(socket, packet, v)),
          );
        });
        next();
      });
    },
  };
}
