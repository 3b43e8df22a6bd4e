// One instance of the in-flight fleet test: an Express app on a real Redis whose handler takes `handlerMs` and records when each request ran.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { Redis } from 'ioredis';
import { RedisStore } from '@floodgate/core';
import { rateLimit } from '../../src';

export interface FleetSetup {
  type: 'setup';
  redisPort: number;
  prefix: string;
  inFlight: number;
  leaseMs: number;
  handlerMs: number;
}
export type FleetReply =
  | { type: 'ready'; port: number }
  /** Each admitted request's [start, end] in ms since the epoch (sub-ms), measured by the handler itself. */
  | { type: 'spans'; spans: [number, number][] };

const now = () => performance.timeOrigin + performance.now();

process.on('message', (message: FleetSetup | { type: 'spans' } | { type: 'exit' }) => {
  if (message.type === 'exit') process.exit(0);
  if (message.type === 'spans') return process.send!({ type: 'spans', spans: spans.splice(0) } satisfies FleetReply);
  const client = new Redis({ port: message.redisPort, host: '127.0.0.1', autoResendUnfulfilledCommands: false });
  client.on('error', () => undefined);
  const app = express();
  app.use(
    rateLimit({
      store: new RedisStore({ client, timeoutMs: 2_000 }),
      prefix: message.prefix,
      limit: 1_000_000,
      windowMs: '1m',
      failMode: 'closed',
      concurrency: { limit: message.inFlight, leaseMs: message.leaseMs },
      logger: { warn() {}, error() {} },
    }),
  );
  const handlerMs = message.handlerMs;
  app.get('/work', (req, res) => {
    const start = now();
    const ms = Number(req.headers['x-delay'] ?? handlerMs);
    setTimeout(() => {
      spans.push([start, now()]);
      res.json({ ok: true });
    }, ms);
  });
  const server = createServer(app);
  // Longer than the test: the load generator's keep-alive sockets are never closed under it (a reused socket the server just closed fails with ECONNRESET).
  server.keepAliveTimeout = 120_000;
  server.listen(0, '127.0.0.1', () => process.send!({ type: 'ready', port: (server.address() as AddressInfo).port } satisfies FleetReply));
});
const spans: [number, number][] = [];
