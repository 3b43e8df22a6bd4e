// Child process of override-fleet.test.ts: one application instance on a real Redis. 'server': an HTTP server (GET /r limited by IP, POST /admin/override setting an override). 'racer': fires N consumes of one subject at once on request and reports every decision.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { createLimiter, RedisStore } from '../src';
import { createHttpLimiter } from '../src/http/http-limiter';

export interface OverrideWorkerSetup {
  mode: 'server' | 'racer';
  port: number;
  prefix: string;
  limit: number;
}

export type RacerRequest =
  | { type: 'race'; subject: string; requests: number; switchTo?: number }
  | { type: 'override'; subject: string; limit: number };
export interface RacerDecision {
  allowed: boolean;
  limit: number | null;
  remaining: number | null;
  reason: string;
}

const setup = JSON.parse(process.argv[2]) as OverrideWorkerSetup;
const client = new Redis({ host: '127.0.0.1', port: setup.port, autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 1 });
client.on('error', () => undefined);
const quiet = { warn() {}, error() {} };

if (setup.mode === 'server') {
  const http = createHttpLimiter({ store: new RedisStore({ client, timeoutMs: 10_000 }), prefix: setup.prefix, limit: setup.limit, windowMs: '1h', overrides: true, logger: quiet, blockCacheSize: 0 });
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (req.method === 'POST' && url.pathname === '/admin/override') {
      const ip = url.searchParams.get('ip') ?? '';
      const limit = Number(url.searchParams.get('limit'));
      const ttlMs = Number(url.searchParams.get('ttlMs'));
      http.override({ ip, route: 'GET /r' }, limit, { ttlMs, reason: 'test' }).then(
        () => res.writeHead(204).end(),
        (error: Error) => res.writeHead(400).end(error.message),
      );
      return;
    }
    const ip = String(req.headers['x-client'] ?? req.socket.remoteAddress);
    http.handle({ ip, headers: {}, method: 'GET', route: '/r' }, req).then(
      (result) => {
        for (const [k, v] of result.headers) res.setHeader(k, v);
        res.writeHead(result.status === 'next' ? 200 : result.status).end(String(result.decision?.limit ?? ''));
      },
      () => res.writeHead(500).end(),
    );
  });
  server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as AddressInfo).port }));
} else {
  // No block cache: every decision is the store's, so each one shows the limit in force when Redis ran it.
  const options = { prefix: setup.prefix, algorithm: 'fixed-window' as const, limit: setup.limit, windowMs: '365d' as const, overrides: true, blockCacheSize: 0, logger: quiet };
  // One request per script call: each decision reads the override as it stands when Redis runs it.
  const limiter = createLimiter({ ...options, store: new RedisStore({ client, timeoutMs: 10_000, coalesce: false }) });
  // The operator's change travels on a connection of its own, not behind this instance's own requests.
  const admin = new Redis({ host: '127.0.0.1', port: setup.port, autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 1 });
  admin.on('error', () => undefined);
  const adminLimiter = createLimiter({ ...options, store: new RedisStore({ client: admin, timeoutMs: 10_000 }) });
  process.on('message', (request: RacerRequest) => {
    if (request.type === 'override') {
      void adminLimiter.override(request.subject, request.limit, { ttlMs: '1h' }).then(() => process.send!({ done: true }));
      return;
    }
    const all: Promise<RacerDecision>[] = [];
    let switched = request.switchTo === undefined;
    for (let i = 0; i < request.requests; i++) {
      all.push(
        limiter.consume(request.subject).then((d) => {
          // The change, made while this instance's other requests (and every other instance's) are in flight.
          if (!switched) {
            switched = true;
            void adminLimiter.override(request.subject, request.switchTo!, { ttlMs: '1h' });
          }
          return { allowed: d.allowed, limit: d.limit, remaining: d.remaining, reason: d.reason };
        }),
      );
    }
    void Promise.all(all).then((decisions) => process.send!({ decisions }));
  });
  process.send!({ ready: true });
}
