// The socket-chat example: a ws chat on /ws and a Socket.IO chat on one HTTP server, both limited by @floodgate/socket on one store.
import { createServer, type Server } from 'node:http';
import { MemoryStore, RedisStore, type RedisClient } from '@floodgate/core';
import { socketIoLimiter, wsLimiter } from '@floodgate/socket';
import { Server as IoServer } from 'socket.io';
import { WebSocketServer, type WebSocket } from 'ws';

/** Messages per caller per 10 s, over every connection (ws and Socket.IO count apart: two prefixes). */
export const MESSAGES = 20;
/** Open connections per caller. */
export const OPEN = 3;
/** Messages per connection per 10 s: one connection cannot spend the caller's whole budget. */
export const PER_CONNECTION = 10;

export interface ChatOptions {
  /** Counts in Redis when given (every instance shares them); else in this process's memory. */
  redis?: RedisClient;
  /** How long the RedisStore waits for Redis (RedisStoreOptions.timeoutMs). Default Floodgate's, 100 ms. */
  redisTimeoutMs?: number;
  prefix?: string;
  /** Your proxies, when the app runs behind one (their X-Forwarded-For is then read). */
  trustProxy?: string[];
}

/** The chat's HTTP server (not listening yet) and how to stop it with its sockets. */
export interface Chat {
  readonly server: Server;
  /** Closes every ws and Socket.IO connection (their leases are released), then the server. */
  close(): Promise<void>;
}

export function createChat(options: ChatOptions = {}): Chat {
  const store = options.redis ? new RedisStore({ client: options.redis, timeoutMs: options.redisTimeoutMs }) : new MemoryStore();
  const prefix = options.prefix ?? 'chat';
  const limits = {
    store,
    messages: { limit: MESSAGES, windowMs: '10s' as const },
    perConnection: { limit: PER_CONNECTION, windowMs: '10s' as const },
    connections: { limit: OPEN },
    onLimit: 'error' as const,
    trustProxy: options.trustProxy,
    // A key your app issued (x-api-key or Authorization: Bearer) is its own caller; a made-up one counts as its IP.
    identity: { resolveKey: (key: string) => (key === 'demo-key' ? { account: 'demo' } : null) },
  };
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' }).end('socket-chat: ws on /ws, Socket.IO on /socket.io\n');
  });

  // ws on /ws: the handshake is decided in verifyClient (a 4th connection gets HTTP 429), each message before the chat sees it.
  const ws = wsLimiter({ ...limits, prefix: `${prefix}-ws` });
  const wss = new WebSocketServer({ noServer: true, verifyClient: ws.verifyClient });
  server.on('upgrade', (req, socket, head) => {
    if (req.url?.startsWith('/ws')) wss.handleUpgrade(req, socket, head, (client) => wss.emit('connection', client, req));
  });
  wss.on('connection', (client: WebSocket, req) => {
    ws.attach(client, req, (data) => {
      for (const peer of wss.clients) peer.send(JSON.stringify({ type: 'chat', text: String(data) }));
    });
  });

  // Socket.IO: the namespace middleware refuses a 4th connection (connect_error, data.status 429) and decides each event.
  const io = new IoServer(server, { destroyUpgrade: false });
  io.use(socketIoLimiter({ ...limits, prefix: `${prefix}-io`, cost: { chat: 1, image: 5 } }).middleware);
  io.on('connection', (socket) => {
    socket.on('chat', (text: string, ack?: (answer: unknown) => void) => {
      io.emit('chat', text);
      ack?.({ ok: true });
    });
    socket.on('image', (image: unknown, ack?: (answer: unknown) => void) => {
      io.emit('image', image);
      ack?.({ ok: true });
    });
  });
  return {
    server,
    async close() {
      // Upgraded connections are not the HTTP server's to close: end them first, or server.close waits for them.
      for (const client of wss.clients) client.terminate();
      wss.close();
      server.closeAllConnections();
      // io.close() disconnects every socket, then closes the HTTP server.
      await new Promise<void>((resolve) => void io.close(() => resolve()));
    },
  };
}
