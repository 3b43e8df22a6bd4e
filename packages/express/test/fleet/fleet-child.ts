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
  /**
   * Each request that finished in the handler: its [start, end] in ms since the epoch (sub-ms),
   * measured by the handler itself; and how many left the handler because the client closed the
   * connection first (aborted while holding their lease), or whose client had gone already when the
   * handler began (closed between the lease's admission and the handler: it held its lease too).
   * All since the last 'spans'.
   */
  | { type: 'spans'; spans: [number, number][]; abortedInHandler: number; closedBeforeHandler: number };

// The machine's monotonic clock (CLOCK_MONOTONIC, in ms), one clock for every process on it: timeOrigin +
// now() is each process's own reading of the wall clock at start, and two processes' differ by more than
// a Redis round trip (a clean-clone run saw 6 in the handler at once where 5 is the in-flight limit).
const now = () => Number(process.hrtime.bigint()) / 1e6;

process.on('message', (message: FleetSetup | { type: 'spans' } | { type: 'exit' }) => {
  if (message.type === 'exit') process.exit(0);
  if (message.type === 'spans') {
    process.send!({ type: 'spans', spans: spans.splice(0), abortedInHandler, closedBeforeHandler } satisfies FleetReply);
    abortedInHandler = 0;
    closedBeforeHandler = 0;
    return;
  }
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
    // The lease is taken (and seen in Redis) before the handler runs: a close in between fired
    // before this handler could listen for it.
    if (res.closed) {
      closedBeforeHandler++;
      return;
    }
    const start = now();
    const ms = Number(req.headers['x-delay'] ?? handlerMs);
    const timer = setTimeout(() => {
      spans.push([start, now()]);
      res.json({ ok: true });
    }, ms);
    // The client went away mid-handler: counted, and the handler stops (the adapter frees the lease on the same close).
    res.on('close', () => {
      if (res.writableFinished) return;
      clearTimeout(timer);
      abortedInHandler++;
    });
  });
  const server = createServer(app);
  // Longer than the test: the load generator's keep-alive sockets are never closed under it (a reused socket the server just closed fails with ECONNRESET).
  server.keepAliveTimeout = 120_000;
  server.listen(0, '127.0.0.1', () => process.send!({ type: 'ready', port: (server.address() as AddressInfo).port } satisfies FleetReply));
});
const spans: [number, number][] = [];
let abortedInHandler = 0;
let closedBeforeHandler = 0;
