// Real ws and Socket.IO servers with the limiter, and real clients that wait on events: the socket tests' shared helpers.
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { RedisStore, type Store } from '@floodgate/core';
import { startRedis, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { Server as IoServer } from 'socket.io';
import { io as ioClient, type Socket as ClientSocket } from 'socket.io-client';
import { socketIoLimiter, wsLimiter, type LimitedEvent, type SocketIoLimiterOptions, type SocketLimiterOptions, type WsLimiterOptions } from '../src';

/** A running server's counts: admitted messages seen by the app's handler, and the limiter's refusals. */
export interface Counts {
  admitted: number;
  limited: LimitedEvent[];
  /** Connections whose server side has closed (its slot released by then). */
  closed: number;
}

export interface Running {
  readonly url: string;
  readonly port: number;
  readonly counts: Counts;
  stop(): Promise<void>;
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

/** A ws server that echoes each admitted message back as `ok:<message>`. */
export async function startWs(options: WsLimiterOptions, useVerifyClient = true): Promise<Running> {
  const counts: Counts = { admitted: 0, limited: [], closed: 0 };
  const limiter = wsLimiter({ ...options, onLimited: (e) => counts.limited.push(e) });
  const server = createServer();
  const wss = new WebSocketServer({ server, ...(useVerifyClient && { verifyClient: limiter.verifyClient }) });
  wss.on('connection', (ws, req) => {
    limiter.attach(ws, req, (data) => {
      counts.admitted++;
      ws.send(`ok:${String(data)}`);
    });
    ws.on('close', () => counts.closed++);
  });
  const port = await listen(server);
  return {
    url: `ws://127.0.0.1:${port}`,
    port,
    counts,
    stop: () =>
      new Promise((resolve) => {
        for (const client of wss.clients) client.terminate();
        wss.close(() => server.close(() => resolve()));
      }),
  };
}

/** The events the Socket.IO test server handles. */
export const EVENTS = ['chat', 'upload'] as const;

/** A Socket.IO server whose handlers ack (or emit 'ok') each admitted event. */
export async function startIo(options: SocketIoLimiterOptions): Promise<Running> {
  const counts: Counts = { admitted: 0, limited: [], closed: 0 };
  const limiter = socketIoLimiter({ ...options, onLimited: (e) => counts.limited.push(e) });
  const server = createServer();
  const io = new IoServer(server, { transports: ['websocket'] });
  io.use(limiter.middleware);
  io.on('connection', (socket) => {
    // Named handlers: Socket.IO calls onAny listeners before the socket's middlewares (socket.use), so they would see refused events too.
    for (const event of EVENTS) {
      socket.on(event, (...args: unknown[]) => {
        counts.admitted++;
        const ack = args[args.length - 1];
        if (typeof ack === 'function') ack({ ok: event });
        else socket.emit('ok', event);
      });
    }
    socket.on('disconnect', () => counts.closed++);
  });
  const port = await listen(server);
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    counts,
    stop: () => new Promise((resolve) => void io.close(() => resolve())),
  };
}

/** A ws client once open, or the HTTP status its handshake was refused with. */
export function openWs(url: string, headers: Record<string, string> = {}): Promise<{ ws: WebSocket; status?: undefined } | { ws?: undefined; status: number; retryAfter?: string; closeCode?: number }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.once('open', () => resolve({ ws }));
    ws.once('unexpected-response', (_req, res) => {
      resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] });
      res.resume();
      ws.terminate();
    });
    ws.once('error', (error) => reject(error));
  });
}

/** Closes a ws client and waits until it has closed. */
export function closeWs(ws: WebSocket): Promise<void> {
  if (ws.readyState === WebSocket.CLOSED) return Promise.resolve();
  return new Promise((resolve) => {
    ws.once('close', () => resolve());
    ws.close();
  });
}

/** Resolves when `count` frames have arrived on these clients; the frames, in order per client. */
export function framesOn(clients: readonly WebSocket[], count: number): Promise<string[]> {
  return new Promise((resolve) => {
    const frames: string[] = [];
    if (count === 0) return resolve(frames);
    for (const ws of clients) {
      ws.on('message', (data) => {
        frames.push(String(data));
        if (frames.length === count) resolve(frames);
      });
    }
  });
}

/** A Socket.IO client once connected, or the connect_error's `data` when its handshake was refused. */
export function openIo(url: string, headers: Record<string, string> = {}): Promise<{ socket: ClientSocket; refused?: undefined } | { socket?: undefined; refused: { status: number; retryAfterMs: number; reason: string } }> {
  return new Promise((resolve) => {
    const socket = ioClient(url, { transports: ['websocket'], extraHeaders: headers, reconnection: false, forceNew: true });
    socket.once('connect', () => resolve({ socket }));
    socket.once('connect_error', (error: Error & { data?: { status: number; retryAfterMs: number; reason: string } }) => {
      socket.close();
      resolve({ refused: error.data ?? { status: 0, retryAfterMs: 0, reason: error.message } });
    });
  });
}

/** Waits until `check` holds, re-checking on each turn of the server's counts (every 10 ms), up to `timeoutMs`. */
export async function until(check: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * Runs a file's tests on each store: the memory store, and a real redis-server started once for the
 * file (each server on its own random prefix). `withStore` fills in `store` and `prefix` unless the
 * test set its own store.
 */
export function eachStore(body: (withStore: <O extends SocketLimiterOptions>(options: O) => O) => void): void {
  describe.each(['memory', 'redis'] as const)('on the %s store', (kind) => {
    let redis: RedisServer | undefined;
    let client: Redis | undefined;
    let store: Store | undefined;
    beforeAll(async () => {
      if (kind !== 'redis') return;
      redis = await startRedis();
      client = redis.client({ autoResendUnfulfilledCommands: false });
      store = new RedisStore({ client, timeoutMs: 30_000 });
    });
    afterAll(async () => {
      client?.disconnect();
      await redis?.stop();
    });
    body((options) => (options.store !== undefined || kind === 'memory' ? options : { ...options, store, prefix: `t${randomBytes(4).toString('hex')}` }));
  });
}
