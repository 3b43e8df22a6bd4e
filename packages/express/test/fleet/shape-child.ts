// One instance of the shaping fleet test: an Express app on a real Redis whose routes /a and /b are shaped (gcra, 10/s, burst 1, maxDelayMs 2 s); it records each admission's slot (Redis clock) and when its handler ran (Redis TIME).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { Redis } from 'ioredis';
import { RedisStore, type Store, type StoreRequest, type StoreResult } from '@floodgate/core';
import { rateLimit } from '../../src';

export interface ShapeSetup {
  type: 'setup';
  redisPort: number;
  prefix: string;
  perSecond: number;
  maxDelayMs: number;
}
/** One admitted request: its route, its reserved slot (decision.at + delayMs, Redis ms), its delay, and Redis TIME when its handler ran. */
export interface Admission {
  route: string;
  slot: number;
  delayMs: number;
  ranAt: number;
}
export type ShapeReply =
  | { type: 'ready'; port: number }
  /** Since the start: admissions, refusals' retryAfterMs by route, holds the store granted, refunds it applied. */
  | { type: 'record'; admissions: Admission[]; refused: { route: string; retryAfterMs: number }[]; held: number; refunds: number };

let held = 0;
let refunds = 0;
const admissions: Admission[] = [];
const refused: { route: string; retryAfterMs: number }[] = [];

/** The RedisStore, counting the holds it granted and the refunds it applied (the test waits on these counts, not on time). */
function watched(inner: RedisStore): Store {
  return {
    name: inner.name,
    timeoutMs: inner.timeoutMs,
    evaluate: (request: StoreRequest) =>
      inner.evaluate(request).then((result: StoreResult) => {
        if (result.delayMs) held++;
        if (request.mode === 'refund') refunds++;
        return result;
      }),
    reset: (keys) => inner.reset(keys),
  };
}

process.on('message', (message: ShapeSetup | { type: 'record' }) => {
  if (message.type === 'record') {
    process.send!({ type: 'record', admissions, refused, held, refunds } satisfies ShapeReply);
    return;
  }
  const client = new Redis({ port: message.redisPort, host: '127.0.0.1', autoResendUnfulfilledCommands: false });
  client.on('error', () => undefined);
  const app = express();
  app.use(
    rateLimit({
      store: watched(new RedisStore({ client, timeoutMs: 2_000 })),
      prefix: message.prefix,
      algorithm: 'gcra',
      burst: 1,
      refillPerSecond: message.perSecond,
      shape: { maxDelayMs: message.maxDelayMs },
      failMode: 'closed',
      blockCacheSize: 0,
      onLimited: ({ decision, scope }) => void refused.push({ route: scope, retryAfterMs: decision.retryAfterMs }),
      logger: { warn() {}, error() {} },
    }),
  );
  app.get(['/a', '/b'], (req, res) => {
    const d = req.rateLimit!;
    void client.time().then(([s, us]) => {
      const ranAt = Number(s) * 1000 + Math.floor(Number(us) / 1000);
      admissions.push({ route: req.path, slot: d.at! + (d.delayMs ?? 0), delayMs: d.delayMs ?? 0, ranAt });
      res.json({ ok: true });
    });
  });
  const server = createServer(app);
  server.keepAliveTimeout = 120_000;
  server.listen(0, '127.0.0.1', () => process.send!({ type: 'ready', port: (server.address() as AddressInfo).port } satisfies ShapeReply));
});
