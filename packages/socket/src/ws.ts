// wsLimiter: Floodgate for a `ws` (8.x) server: the handshake refused over the open-connection limit, each message decided before the app's handler sees it.
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import { invalidOption } from '@floodgate/core/http';
import { admit, SocketConnection, type Admission, type Handshake, type Verdict } from './connection';
import { resolveSocketOptions, type ResolvedSocketOptions, type SocketLimiterOptions } from './options';

/** A ws message as ws hands it over (its `RawData`): a Buffer, an ArrayBuffer or fragments, per `binaryType`. */
export type WsData = Buffer | ArrayBuffer | Buffer[];

/** The parts of a ws `WebSocket` the limiter uses (typed by shape: no import of ws). */
export interface WsSocket {
  on(event: 'message', listener: (data: WsData, isBinary: boolean) => void): unknown;
  once(event: 'close', listener: () => void): unknown;
  send(data: string): void;
  close(code?: number, reason?: string): void;
}

/** The upgrade request ws hands to `verifyClient` (`info.req`) and to 'connection'. */
export interface UpgradeRequest {
  readonly headers: IncomingHttpHeaders;
  readonly socket: { readonly remoteAddress?: string; once(event: 'close', listener: () => void): unknown };
}

export interface WsLimiterOptions extends SocketLimiterOptions {
  /** Units one message draws: a whole number, or a function of the message. Default 1. */
  cost?: number | ((data: WsData, isBinary: boolean) => number);
  /** With `onLimit: 'error'`, the text frame sent back for a refused message. Default JSON: `{"type":"rate-limited","limit":...,"retryAfterMs":...,"reason":...}`. */
  errorMessage?: (verdict: Verdict) => string;
}

export interface WsLimiter {
  /**
   * For `new WebSocketServer({ verifyClient })`: identifies the caller and takes a connection slot
   * before the upgrade; refuses with 429 and Retry-After (401 for an unknown key with
   * `unknownKey: 'reject'`, 503 when the store failed and failMode is 'closed').
   */
  verifyClient(info: { req: UpgradeRequest }, callback: (result: boolean, code?: number, message?: string, headers?: OutgoingHttpHeaders) => void): void;
  /**
   * Limits one connection's messages: `handler` gets only the admitted ones, in order. Call it in
   * 'connection'. Without `verifyClient`, the handshake is decided here, and a refused connection
   * is closed (`closeCode` for a limit, 1008 for an unknown key, 1013 when the store failed).
   */
  attach(socket: WsSocket, req: UpgradeRequest, handler: (data: WsData, isBinary: boolean) => void): void;
}

const defaultErrorMessage = (v: Verdict) => JSON.stringify({ type: 'rate-limited', limit: v.limit, retryAfterMs: v.retryAfterMs, reason: v.reason });

function handshakeOf(req: UpgradeRequest): Handshake {
  return { address: req.socket?.remoteAddress, headers: req.headers ?? {} };
}

/** The close code for a connection refused after its upgrade. */
function refusalCode(o: ResolvedSocketOptions, status: 401 | 429 | 503): number {
  return status === 429 ? o.closeCode : status === 401 ? 1008 : 1013;
}

function costOf(cost: WsLimiterOptions['cost']): (data: WsData, isBinary: boolean) => unknown {
  if (cost === undefined) return () => 1;
  if (typeof cost === 'function') return cost;
  if (typeof cost !== 'number' || !Number.isInteger(cost) || cost < 0) invalidOption('cost', cost, 'a whole number from 0, or a function of the message');
  return () => cost;
}

/**
 * Floodgate for a ws server.
 * @example
 * const limiter = wsLimiter({ store, messages: { limit: 50, windowMs: '10s' }, connections: { limit: 3 } });
 * const wss = new WebSocketServer({ server, verifyClient: limiter.verifyClient });
 * wss.on('connection', (ws, req) => limiter.attach(ws, req, (data) => ws.send(data)));
 */
export function wsLimiter(options: WsLimiterOptions): WsLimiter {
  const o = resolveSocketOptions(options, 'wsLimiter', ['cost', 'errorMessage']);
  const cost = costOf(options.cost);
  const errorMessage = options.errorMessage ?? defaultErrorMessage;
  if (typeof errorMessage !== 'function') invalidOption('errorMessage', errorMessage, 'a function of the refusal that returns the text to send');
  // Handshakes decided in verifyClient, until 'connection' picks them up (or their socket closes).
  const admitted = new WeakMap<UpgradeRequest, Promise<Admission>>();

  function limited(socket: WsSocket, v: Verdict): void {
    if (o.onLimit === 'error') socket.send(errorMessage(v));
    else if (o.onLimit === 'close') socket.close(o.closeCode, 'rate limited');
  }

  return {
    verifyClient(info, callback) {
      const req = info.req;
      const admission = admit(o, handshakeOf(req));
      admitted.set(req, admission);
      void admission.then((a) => {
        if (!a.allowed) return callback(false, a.status, a.status === 429 ? 'Too Many Requests' : a.status === 401 ? 'Unauthorized' : 'Service Unavailable', { 'Retry-After': String(Math.max(1, Math.ceil(a.retryAfterMs / 1000))) });
        // The TCP socket's end frees the slot even when the upgrade never completes.
        req.socket.once('close', a.release);
        callback(true);
      });
    },
    attach(socket, req, handler) {
      if (typeof handler !== 'function') invalidOption('handler', handler, 'a function (data, isBinary) for the admitted messages');
      const admission = admitted.get(req) ?? admit(o, handshakeOf(req));
      admitted.delete(req);
      const connection = new SocketConnection(o, admission);
      socket.once('close', () => connection.close());
      void admission.then((a) => {
        if (!a.allowed) socket.close(refusalCode(o, a.status), 'rate limited');
      });
      socket.on('message', (data, isBinary) => {
        connection.submit(
          () => cost(data, isBinary),
          (v) => (v.allowed ? handler(data, isBinary) : limited(socket, v)),
        );
      });
    },
  };
}
