// Child process of shape-hold.ts (run with --expose-gc): an Express app with two routes on one connection budget, /shaped (held by `shape`) and /slow (a handler that waits, the same socket held without shaping), reporting its heap, RSS and hold counts over IPC.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { MemoryStore, type Store, type StoreRequest, type StoreResult } from '@floodgate/core';
import { rateLimit } from '@floodgate/express';

const inner = new MemoryStore();
let held = 0;
let refunds = 0;
/** Shaped decisions made (mode 'hold'), held or not. */
let decided = 0;
const store: Store = {
  name: 'memory',
  timeoutMs: 0,
  evaluate: async (request: StoreRequest) => store.evaluateSync!(request),
  evaluateSync(request: StoreRequest): StoreResult {
    const result = inner.evaluateSync(request);
    if (request.mode === 'hold') decided++;
    if (result.delayMs) held++;
    if (request.mode === 'refund') refunds++;
    return result;
  },
  reset: (keys) => inner.reset(keys),
};
const waiting = Number(process.env.SHAPE_HOLDS ?? 1000);
const app = express();
// N slots within 250 s: every request of the run is held (maxDelayMs 300 s), the first ones served while the rest arrive.
const limiter = rateLimit({ store, algorithm: 'gcra', burst: 1, refillPerSecond: waiting / 250, logger: { warn() {}, error() {} } });
let served = 0;
app.get('/shaped', limiter.route({ shape: { maxDelayMs: 300_000, maxWaiting: waiting + 10 } }), (_req, res) => void (served++, res.end('ok')));
// The same request held open by the handler instead: what any slow request costs without shaping.
let slow = 0;
const pending: (() => void)[] = [];
app.get('/slow', (_req, res) => {
  slow++;
  pending.push(() => res.end('ok'));
  res.on('close', () => void (slow -= res.writableFinished ? 0 : 1));
});

async function memory(): Promise<{ heap: number; rss: number }> {
  for (let i = 0; i < 3; i++) {
    (globalThis as { gc?: () => void }).gc?.();
    await new Promise((resolve) => setImmediate(resolve));
  }
  const m = process.memoryUsage();
  return { heap: m.heapUsed, rss: m.rss };
}

process.on('message', (m: { type: 'measure' }) => {
  if (m.type === 'measure') void memory().then((mem) => process.send!({ type: 'measured', ...mem, held, refunds, slow, served, decided }));
});
const server = createServer(app);
server.maxConnections = waiting * 3;
server.listen(0, '127.0.0.1', () => process.send!({ type: 'ready', port: (server.address() as AddressInfo).port }));
