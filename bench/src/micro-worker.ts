// Child process of `pnpm bench:micro`: µs per decision of the core on the memory store, of the HTTP
// pipeline, and of each adapter's per-request work against stand-in request and response objects.
// Compiled by build.ts like a release build (no tsx keepNames wrappers), run with --expose-gc.
import { IncomingMessage, ServerResponse } from 'node:http';
import { Session } from 'node:inspector';
import type { Socket } from 'node:net';
import { Writable } from 'node:stream';
import { createLimiter, RedisStore, type RequestFacts } from '@floodgate/core';
import { createHttpLimiter } from '@floodgate/core/http';
import type { Context, MiddlewareHandler } from 'hono';
import { startRedis, type RedisServer } from '@floodgate/testing';
import { median } from './stats';

export interface MicroCase {
  name: string;
  /** One operation; resolves (or calls back) when the decision has been applied. */
  setup(): Promise<() => unknown>;
  /**
   * 'cpu': the figure is this process's CPU time (user + system) per decision, not the wall time:
   * for cases that wait on a real redis-server, whose own time is not Floodgate's process's. Default 'wall'.
   */
  metric?: 'wall' | 'cpu';
  /** Decisions one operation makes (default 1): the figure is per decision. */
  perOp?: number;
}

export interface MicroResult {
  name: string;
  /** Median over samples of µs per operation. */
  us: number;
  /** Smallest and largest sample, µs per operation. */
  min: number;
  max: number;
  /** Operations per sample. */
  ops: number;
  samples: number;
  /** What one operation answered (a check that the case measured what it names). */
  answered: string;
  /** With `job.alloc`: bytes allocated per decision (V8's sampling heap profiler, collected objects included). */
  bytes?: number;
}

const IP = '127.0.0.1';
const HEADERS = {
  host: '127.0.0.1:3000',
  'user-agent': 'autocannon',
  accept: '*/*',
  connection: 'keep-alive',
};
/** HEADERS as Node's parser lists them (name, value, ...): what @hono/node-server reads. */
const RAW_HEADERS = Object.entries(HEADERS).flat();
/** Admit regime of `pnpm bench`: nothing is ever limited. */
const ADMIT = { limit: 1_000_000_000, windowMs: 3_600_000 } as const;

/** Checks an answer now, or when its promise resolves: synchronous answers stay synchronous, as in the adapters. */
function whenDone<T>(answer: T | Promise<T>, check: (value: T) => void): Promise<void> | undefined {
  if (answer instanceof Promise) return answer.then(check);
  check(answer);
  return undefined;
}

/** A callback-style operation as a promise the loop can await. */
function viaCallback(run: (done: (error?: unknown) => void) => void): () => Promise<void> {
  return () =>
    new Promise<void>((resolve, reject) => {
      run((error) => (error ? reject(error) : resolve()));
    });
}

/** A stand-in for Node's ServerResponse where the adapters touch it. */
function standInRes() {
  const headers: Record<string, unknown> = {};
  return {
    headers,
    statusCode: 200,
    writableFinished: false,
    headersSent: false,
    setHeader(name: string, value: unknown) {
      headers[name.toLowerCase()] = value;
      return this;
    },
    getHeader: (name: string) => headers[name.toLowerCase()],
    getHeaders: () => headers,
    removeHeader: (name: string) => void delete headers[name.toLowerCase()],
    once() {
      return this;
    },
    on() {
      return this;
    },
    writeHead() {
      return this;
    },
    end() {},
  };
}

// The last answer, described only when a sample ends: formatting it per operation would be measured too.
let lastAnswer: () => string = () => '';
const remember = (describe: () => string) => {
  lastAnswer = describe;
};

/** One redis-server for the Redis cases of a run, started on first use (a free loopback port, @floodgate/testing). */
let redis: Promise<RedisServer> | undefined;
const redisServer = () => (redis ??= startRedis());

/** Distinct addresses of the rotation case: half again as many as core's per-address memos hold. */
const ROTATING_CALLERS = 15_000;

/** Subjects per event-loop turn in the Redis cases: a busy server's turn with many callers. */
const TURN = 16;

/** RedisStore on ioredis as the bench servers make it (the same client options), admitting every decision. */
async function redisLimiter() {
  const server = await redisServer();
  const client = server.client({ maxRetriesPerRequest: 1, autoResendUnfulfilledCommands: false });
  return createLimiter({ store: new RedisStore({ client, timeoutMs: 1_000 }), ...ADMIT, prefix: `micro${Math.random().toString(36).slice(2, 8)}` });
}

/** A socket that discards what it is sent, from the bench's client address: Node's req/res without the network. */
function discardingSocket(): Socket {
  return Object.assign(new Writable({ write: (_chunk, _encoding, callback) => callback() }), {
    remoteAddress: IP,
    remotePort: 50_000,
    remoteFamily: 'IPv4',
    encrypted: false,
    setTimeout() {},
    destroySoon() {},
    cork() {},
    uncork() {},
  }) as unknown as Socket;
}

/** A GET / as Node's HTTP server hands it over (the bench's load headers, no body), and its response on `socket`. */
function nodeRequest(socket: Socket): { req: IncomingMessage; res: ServerResponse } {
  const req = new IncomingMessage(socket);
  Object.assign(req, { method: 'GET', url: '/', headers: HEADERS, rawHeaders: RAW_HEADERS, httpVersion: '1.1', httpVersionMajor: 1, httpVersionMinor: 1, complete: true });
  req.push(null);
  const res = new ServerResponse(req);
  res.assignSocket(socket);
  return { req, res };
}

/**
 * One whole Fastify request as `app.routing` serves it (routing, every hook Fastify composed for the
 * route, the handler, the reply written to Node's own IncomingMessage/ServerResponse on a socket
 * that discards what it is sent): what a limited request costs inside Fastify, without the network.
 */
async function fastifyRequests(limited: boolean): Promise<() => Promise<void>> {
  const fastify = (await import('fastify')).default;
  const app = fastify({ logger: false });
  if (limited) {
    const { rateLimit } = await import('@floodgate/fastify');
    await app.register(rateLimit, { ...ADMIT });
  }
  app.get('/', async () => 'ok');
  await app.ready();
  const socket = discardingSocket();
  return () =>
    new Promise<void>((resolve, reject) => {
      const { req, res } = nodeRequest(socket);
      res.on('finish', () => {
        res.detachSocket(socket);
        if (res.statusCode !== 200) return reject(new Error(`fastify request case answered ${res.statusCode}`));
        // Fastify writes its headers with writeHead: the head as Node wrote it.
        const head = (res as unknown as { _header: string })._header;
        if (limited && !head.includes('ratelimit-remaining')) return reject(new Error('fastify request case sent no headers'));
        remember(() => `${res.statusCode} ${head.split('\r\n').filter((l) => l.startsWith('ratelimit-') || l.startsWith('content-length')).join(' ')}`);
        resolve();
      });
      app.routing(req, res);
    });
}

/** Which Hono request case: no limiter, Floodgate admitting, Floodgate denying a blocked caller, or the peer hono-rate-limiter (MemoryStore) admitting. */
type HonoRegime = 'none' | 'admit' | 'deny' | 'peer';

/**
 * One whole Hono request as the bench's server serves it: @hono/node-server's listener (its Request
 * over Node's req, `app.fetch`, its Response written to Node's ServerResponse on a socket that
 * discards what it is sent), Hono's router and compose, the limiter app-wide (`app.use`, as the
 * server mounts one), the handler's `c.text`. Not `app.fetch(new Request(...))` on Node's own
 * globals: their Response builds a body stream per request (most of such a case's time), which
 * node-server's lightweight Response, the one the bench's server answers with, never does.
 */
async function honoRequests(regime: HonoRegime): Promise<() => Promise<void>> {
  // require(), as serve-hono.ts does: @floodgate/hono reads Hono's route helper through
  // require('hono/route'), and Hono's ESM build beside it would be a second copy.
  const { Hono } = require('hono') as typeof import('hono');
  const { getRequestListener } = require('@hono/node-server') as typeof import('@hono/node-server');
  const { getConnInfo } = require('@hono/node-server/conninfo') as typeof import('@hono/node-server/conninfo');
  const app = new Hono();
  if (regime === 'peer') {
    // As the bench's server sets it up (limiters.ts): its MemoryStore, the client IP from getConnInfo.
    const { rateLimiter } = require('hono-rate-limiter') as { rateLimiter: (options: object) => MiddlewareHandler };
    app.use(rateLimiter({ ...ADMIT, keyGenerator: (c: Context) => getConnInfo(c).remote.address }));
  } else if (regime !== 'none') {
    const { rateLimit } = require('@floodgate/hono') as typeof import('@floodgate/hono');
    app.use(rateLimit({ ...(regime === 'admit' ? ADMIT : { limit: 1, windowMs: 3_600_000 }), getConnInfo }));
  }
  app.get('/', (c) => c.text('ok'));
  // It puts node-server's Request and Response in place of Node's globals, for this process: the
  // Hono cases come last, after every case that does not use them.
  const listener = getRequestListener(app.fetch);
  const socket = discardingSocket();
  const request = (status: number) =>
    new Promise<void>((resolve, reject) => {
      const { req, res } = nodeRequest(socket);
      res.on('finish', () => {
        res.detachSocket(socket);
        const head = (res as unknown as { _header: string })._header;
        // Header names as sent: lower case through Hono's Headers, as given through Node's setHeader.
        const names = head.toLowerCase();
        if (res.statusCode !== status) return reject(new Error(`hono ${regime} case answered ${res.statusCode}`));
        if (regime !== 'none' && !names.includes('ratelimit-remaining')) return reject(new Error(`hono ${regime} case sent no headers`));
        if (status === 429 && !names.includes('retry-after')) return reject(new Error('hono deny case sent no Retry-After'));
        remember(() => `${res.statusCode} ${head.split('\r\n').filter((l) => /^(ratelimit-|retry-after|content-)/i.test(l)).join(' ')}`);
        resolve();
      });
      void listener(req, res);
    });
  if (regime !== 'deny') return () => request(200);
  // The deny case's one admitted request (limit 1): the caller is in the block cache after it.
  await request(200);
  return () => request(429);
}

export const CASES: MicroCase[] = [
  {
    name: 'core: limiter.consume, admitted (memory store, sliding-window-counter)',
    async setup() {
      const limiter = createLimiter({ ...ADMIT });
      const options = { scope: 'GET /' };
      return () =>
        limiter.consume('ip:127.0.0.1', options).then((d) => {
          if (!d.allowed) throw new Error('core admit case was limited');
          remember(() => `${d.reason} remaining=${d.remaining}`);
        });
    },
  },
  {
    name: 'core: limiter.consume, denied from the block cache',
    async setup() {
      const limiter = createLimiter({ limit: 1, windowMs: 3_600_000 });
      await limiter.consume('ip:127.0.0.1');
      return () =>
        limiter.consume('ip:127.0.0.1').then((d) => {
          if (d.allowed) throw new Error('core reject case was admitted');
          remember(() => d.reason);
        });
    },
  },
  {
    name: `core: limiter.consume on RedisStore, ${TURN} subjects a turn, admitted (CPU of this process per decision)`,
    metric: 'cpu',
    perOp: TURN,
    async setup() {
      const limiter = await redisLimiter();
      const options = { scope: 'GET /' };
      let next = 0;
      return async () => {
        const turn = [];
        for (let i = 0; i < TURN; i++) turn.push(limiter.consume(`ip:198.18.0.${next++ % 250}`, options));
        const decisions = await Promise.all(turn);
        if (!decisions.every((d) => d.allowed && d.reason === 'allowed')) throw new Error(`redis case: ${decisions.find((d) => !d.allowed || d.reason !== 'allowed')?.reason}`);
        remember(() => `${decisions[0].reason} remaining=${decisions[0].remaining}`);
      };
    },
  },
  {
    name: `core: limiter.consume on RedisStore, one subject ${TURN} times a turn, admitted (CPU of this process per decision)`,
    metric: 'cpu',
    perOp: TURN,
    async setup() {
      const limiter = await redisLimiter();
      const options = { scope: 'GET /' };
      return async () => {
        const turn = [];
        for (let i = 0; i < TURN; i++) turn.push(limiter.consume('ip:127.0.0.1', options));
        const decisions = await Promise.all(turn);
        if (!decisions.every((d) => d.allowed && d.reason === 'allowed')) throw new Error('redis case was limited or degraded');
        remember(() => `${decisions[0].reason} remaining=${decisions[0].remaining}`);
      };
    },
  },
  {
    name: 'http: handleNow (identity, headers), admitted',
    async setup() {
      const http = createHttpLimiter({ ...ADMIT });
      const facts: RequestFacts = { ip: IP, headers: HEADERS, method: 'GET', route: '/' };
      const request = {};
      return () =>
        whenDone(http.handleNow(facts, request), (r) => {
          if (r.status !== 'next') throw new Error(`http admit case answered ${r.status}`);
          remember(() => `${r.status} ${r.headers.map(([n, v]) => `${n}=${v}`).join(' ')}`);
        });
    },
  },
  {
    // More distinct addresses than core's per-address memos hold (10,000 each: identities, keys):
    // what a flood from rotating addresses, or a busy public API, costs per request.
    name: `http: handleNow, admitted, ${ROTATING_CALLERS.toLocaleString('en-US')} callers in rotation`,
    async setup() {
      const http = createHttpLimiter({ ...ADMIT });
      const ips = Array.from({ length: ROTATING_CALLERS }, (_, i) => `198.18.${i >> 8}.${i & 255}`);
      const facts = ips.map((ip): RequestFacts => ({ ip, headers: HEADERS, method: 'GET', route: '/' }));
      const request = {};
      let next = 0;
      return () =>
        whenDone(http.handleNow(facts[next++ % ROTATING_CALLERS], request), (r) => {
          if (r.status !== 'next') throw new Error(`http rotation case answered ${r.status}`);
          remember(() => `${r.status} ${r.headers.map(([n, v]) => `${n}=${v}`).join(' ')}`);
        });
    },
  },
  {
    name: 'http: handleNow, denied from the block cache',
    async setup() {
      const http = createHttpLimiter({ limit: 1, windowMs: 3_600_000 });
      const facts: RequestFacts = { ip: IP, headers: HEADERS, method: 'GET', route: '/' };
      await http.handle(facts, {});
      return () =>
        whenDone(http.handleNow(facts, {}), (r) => {
          if (r.status !== 429) throw new Error(`http reject case answered ${r.status}`);
          remember(() => `${r.status}`);
        });
    },
  },
  {
    name: 'express: app-wide middleware, admitted (stand-in req/res, one route)',
    async setup() {
      const express = (await import('express')).default;
      const { rateLimit } = await import('@floodgate/express');
      const app = express();
      const middleware = rateLimit({ ...ADMIT });
      app.use(middleware);
      app.get('/', (_req, res) => void res.send('ok'));
      return viaCallback((done) => {
        const res = standInRes();
        const req = { app, method: 'GET', url: '/', originalUrl: '/', headers: HEADERS, ip: IP } as never;
        middleware(req, res as never, (error?: unknown) => {
          if (error) return done(error);
          if (res.headers['ratelimit-remaining'] === undefined) return done(new Error('express case sent no headers'));
          remember(() => `next ratelimit-remaining=${String(res.headers['ratelimit-remaining'])}`);
          done();
        });
      });
    },
  },
  {
    name: 'fastify: route onRequest hook, admitted (stand-in request/reply)',
    async setup() {
      const fastify = (await import('fastify')).default;
      const { rateLimit } = await import('@floodgate/fastify');
      const app = fastify({ logger: false });
      await app.register(rateLimit, { ...ADMIT });
      let hook: ((request: unknown, reply: unknown, done: (error?: Error) => void) => void) | undefined;
      // Registered after the plugin's: sees the route with Floodgate's hook added.
      app.addHook('onRoute', (route) => {
        const hooks = route.onRequest as unknown;
        const list = Array.isArray(hooks) ? hooks : hooks ? [hooks] : [];
        hook = list.find((fn: { name?: string }) => fn.name === 'floodgate');
      });
      app.get('/', async () => 'ok');
      await app.ready();
      if (!hook) throw new Error('no Floodgate onRequest hook on the route');
      const run = hook;
      return viaCallback((done) => {
        const headers: Record<string, unknown> = {};
        const reply = {
          raw: standInRes(),
          header(name: string, value: unknown) {
            headers[name.toLowerCase()] = value;
            return reply;
          },
          code() {
            return reply;
          },
          send() {
            return reply;
          },
          type() {
            return reply;
          },
        };
        const request = { ip: IP, headers: HEADERS, method: 'GET', is404: false, rateLimit: undefined };
        run(request, reply, (error) => {
          if (error) return done(error);
          if (headers['ratelimit-remaining'] === undefined) return done(new Error('fastify case sent no headers'));
          remember(() => `done ratelimit-remaining=${String(headers['ratelimit-remaining'])}`);
          done();
        });
      });
    },
  },
  {
    name: 'fastify: a whole request through app.routing, no limiter (Node req/res, discarding socket)',
    setup: () => fastifyRequests(false),
  },
  {
    name: 'fastify: a whole request through app.routing, limited route admitted (Node req/res, discarding socket)',
    setup: () => fastifyRequests(true),
  },
  {
    name: 'koa: app-wide middleware, admitted (stand-in ctx)',
    async setup() {
      const { rateLimit } = await import('@floodgate/koa');
      const middleware = rateLimit({ ...ADMIT });
      const app = { middleware: [middleware] };
      const next = () => Promise.resolve();
      return async () => {
        const headers: Record<string, unknown> = {};
        const ctx = {
          app,
          ip: IP,
          headers: HEADERS,
          method: 'GET',
          path: '/',
          host: '127.0.0.1:3000',
          state: {} as Record<string, unknown>,
          res: standInRes(),
          set(name: string, value: unknown) {
            headers[name.toLowerCase()] = value;
          },
        };
        await middleware(ctx as never, next);
        if (headers['ratelimit-remaining'] === undefined) throw new Error('koa case sent no headers');
        remember(() => `next ratelimit-remaining=${String(headers['ratelimit-remaining'])}`);
      };
    },
  },
  {
    name: 'hono: a whole request through @hono/node-server, no limiter (Node req/res, discarding socket)',
    setup: () => honoRequests('none'),
  },
  {
    name: 'hono: a whole request through @hono/node-server, app-wide limiter admitting (Node req/res, discarding socket)',
    setup: () => honoRequests('admit'),
  },
  {
    name: 'hono: a whole request through @hono/node-server, app-wide limiter, denied from the block cache (Node req/res, discarding socket)',
    setup: () => honoRequests('deny'),
  },
  {
    name: 'hono: a whole request through @hono/node-server, hono-rate-limiter (MemoryStore) admitting, the peer (Node req/res, discarding socket)',
    setup: () => honoRequests('peer'),
  },
];

/** Runs `ops` operations one after another (awaiting each, as one connection would). Returns µs per op: of wall time, or of this process's CPU. */
async function sample(op: () => unknown, ops: number, metric: 'wall' | 'cpu' = 'wall'): Promise<number> {
  const started = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  for (let i = 0; i < ops; i++) {
    const pending = op();
    if (pending instanceof Promise) await pending;
  }
  if (metric === 'cpu') {
    const used = process.cpuUsage(cpu);
    return (used.user + used.system) / ops;
  }
  return Number(process.hrtime.bigint() - started) / 1000 / ops;
}

/** Every node's sampled bytes in a heap profile (self sizes, summed over the tree). */
interface HeapNode {
  selfSize: number;
  children: HeapNode[];
}
function sampledBytes(node: HeapNode): number {
  let total = node.selfSize;
  for (const child of node.children) total += sampledBytes(child);
  return total;
}

/**
 * Bytes allocated per operation over `ops` operations: V8's sampling heap profiler (one sample per
 * 256 bytes on average), keeping the samples of objects collected meanwhile, so the figure is what
 * was allocated, not what survived. A pass of its own, after the timed samples: sampling slows the code.
 */
async function allocated(op: () => unknown, ops: number): Promise<number> {
  const session = new Session();
  session.connect();
  const post = <T>(method: string, params?: object) =>
    new Promise<T>((resolve, reject) => session.post(method, params, (error, result) => (error ? reject(error) : resolve(result as T))));
  try {
    await post('HeapProfiler.enable');
    await post('HeapProfiler.startSampling', { samplingInterval: 256, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
    for (let i = 0; i < ops; i++) {
      const pending = op();
      if (pending instanceof Promise) await pending;
    }
    const { profile } = await post<{ profile: { head: HeapNode } }>('HeapProfiler.stopSampling');
    return sampledBytes(profile.head) / ops;
  } finally {
    session.disconnect();
  }
}

export async function runCase(c: MicroCase, ops: number, samples: number, alloc = false): Promise<MicroResult> {
  const op = await c.setup();
  const perOp = c.perOp ?? 1;
  // Operations of several decisions: as many decisions a sample as the other cases.
  const count = Math.max(1, Math.round(ops / perOp));
  // Warm-up: let V8 optimise the path, as a server's first seconds do.
  await sample(op, Math.max(Math.ceil(1000 / perOp), count));
  const gc = (globalThis as { gc?: () => void }).gc;
  const us: number[] = [];
  for (let i = 0; i < samples; i++) {
    gc?.();
    us.push((await sample(op, count, c.metric)) / perOp);
  }
  const bytes = alloc ? (await allocated(op, count)) / perOp : undefined;
  return {
    name: c.name,
    us: median(us),
    min: Math.min(...us),
    max: Math.max(...us),
    ops,
    samples,
    answered: lastAnswer(),
    ...(bytes === undefined ? {} : { bytes }),
  };
}

export interface MicroJob {
  ops: number;
  samples: number;
  /** Substrings of case names to run; all when empty. */
  only: string[];
  /** Also measure bytes allocated per decision, in a pass of its own (bench:micro --alloc). */
  alloc?: boolean;
}

async function main(job: MicroJob): Promise<MicroResult[]> {
  const results: MicroResult[] = [];
  try {
    for (const c of CASES) {
      if (job.only.length > 0 && !job.only.some((o) => c.name.includes(o))) continue;
      results.push(await runCase(c, job.ops, job.samples, job.alloc));
    }
  } finally {
    if (redis) await (await redis).stop();
  }
  return results;
}

if (require.main === module) {
  main(JSON.parse(process.argv[2] ?? '{}') as MicroJob).then(
    // Exits once written: the Redis cases' clients would keep the process alive.
    (results) => {
      process.stdout.write(`${JSON.stringify(results)}\n`, () => process.exit(0));
    },
    (error: Error) => {
      console.error(error.stack ?? error.message);
      process.exit(1);
    },
  );
}
