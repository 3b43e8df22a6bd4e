// docs/migrating.md's before/after apps, run side by side on loopback against one real redis-server: each pair admits the same requests.
import type { AddressInfo } from 'node:net';
import { createServer, type RequestListener } from 'node:http';
import { randomUUID } from 'node:crypto';
import { createLimiter, RedisStore } from '@floodgate/core';
import { rateLimit as floodgateExpress } from '@floodgate/express';
import { rateLimit as floodgateFastify } from '@floodgate/fastify';
import { rateLimit as floodgateHono, type RateLimitOptions } from '@floodgate/hono';
import { rateLimit as floodgateKoa } from '@floodgate/koa';
import { startRedis, type RedisServer } from '@floodgate/testing';
import express, { type Express } from 'express';
import Fastify from 'fastify';
import type { Redis } from 'ioredis';
import Koa from 'koa';
import { getRequestListener } from '@hono/node-server';
import { getConnInfo } from '@hono/node-server/conninfo';
import { Hono, type Context, type MiddlewareHandler } from 'hono';

// The peers, as their own READMEs wire them (CommonJS; installed for the benchmarks).
/* eslint-disable @typescript-eslint/no-require-imports */
const { rateLimit: expressRateLimit } = require('express-rate-limit');
const { RedisStore: RateLimitRedisStore } = require('rate-limit-redis');
const fastifyRateLimit = require('@fastify/rate-limit');
const koaRatelimit = require('koa-ratelimit');
const { RateLimiterRedis } = require('rate-limiter-flexible');
const { rateLimiter: honoRateLimiter, RedisStore: HonoRateLimiterRedisStore } = require('hono-rate-limiter');
/* eslint-enable @typescript-eslint/no-require-imports */

/** Every pair's limit, as in the guide's snippets. */
const LIMIT = 100;
/** Requests per app: the limit and then some, all inside one window. */
const SENT = LIMIT + 15;

let server: RedisServer;
let client: Redis;
const closers: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  server = await startRedis();
  // As Floodgate advises for ioredis: never resend a script after a reconnect.
  client = server.client({ autoResendUnfulfilledCommands: false });
});
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});
afterAll(async () => {
  client?.disconnect();
  await server?.stop();
});

/** A fresh key prefix, so no two apps share counts. */
const fresh = (name: string) => `${name}-${randomUUID().slice(0, 8)}`;

async function listen(handler: RequestListener): Promise<string> {
  const http = createServer(handler);
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise((resolve) => http.close(resolve)));
  return `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
}

/** Sends SENT GETs to `url` one after another; how many were admitted (200) and refused (429). */
async function admitted(url: string): Promise<{ admitted: number; refused: number }> {
  const tally = { admitted: 0, refused: 0 };
  for (let i = 0; i < SENT; i++) {
    const { status } = await fetch(url);
    if (status === 200) tally.admitted++;
    else if (status === 429) tally.refused++;
    else throw new Error(`unexpected status ${status} from ${url}`);
  }
  return tally;
}

function expressApp(limiter: express.RequestHandler): Express {
  const app = express();
  app.use(limiter);
  app.get('/', (_req, res) => void res.send('ok'));
  return app;
}

describe('docs/migrating.md: each before/after pair limits the same way', () => {
  it('express-rate-limit (with rate-limit-redis) -> @floodgate/express', async () => {
    const before = expressApp(
      expressRateLimit({
        windowMs: 15 * 60 * 1000,
        limit: LIMIT,
        standardHeaders: 'draft-6',
        legacyHeaders: false,
        store: new RateLimitRedisStore({
          prefix: `${fresh('erl')}:`,
          sendCommand: (command: string, ...args: string[]) => client.call(command, ...args),
        }),
      }),
    );
    const after = expressApp(floodgateExpress({ windowMs: '15m', limit: LIMIT, prefix: fresh('fg'), store: new RedisStore({ client, timeoutMs: 30_000 }) }));
    const [b, a] = [await admitted(await listen(before)), await admitted(await listen(after))];
    expect(b).toEqual({ admitted: LIMIT, refused: SENT - LIMIT });
    expect(a).toEqual(b);
  });

  it('@fastify/rate-limit -> @floodgate/fastify', async () => {
    const before = Fastify();
    await before.register(fastifyRateLimit.default ?? fastifyRateLimit, { max: LIMIT, timeWindow: '1 minute', redis: client, nameSpace: `${fresh('frl')}-` });
    before.get('/', async () => 'ok');
    const after = Fastify();
    await after.register(floodgateFastify, { limit: LIMIT, windowMs: '1m', prefix: fresh('fg'), store: new RedisStore({ client, timeoutMs: 30_000 }) });
    after.get('/', async () => 'ok');
    const urls: string[] = [];
    for (const app of [before, after]) {
      closers.push(() => app.close());
      urls.push(await app.listen({ port: 0, host: '127.0.0.1' }));
    }
    const b = await admitted(urls[0]);
    const a = await admitted(urls[1]);
    expect(b).toEqual({ admitted: LIMIT, refused: SENT - LIMIT });
    expect(a).toEqual(b);
  });

  it('koa-ratelimit -> @floodgate/koa', async () => {
    const ok = (app: Koa) => app.use((ctx) => void (ctx.body = 'ok'));
    const before = new Koa();
    before.use(koaRatelimit({ driver: 'redis', db: client, duration: 60000, max: LIMIT, id: (ctx: Koa.Context) => ctx.ip, namespace: fresh('krl') }));
    ok(before);
    const after = new Koa();
    after.use(floodgateKoa({ store: new RedisStore({ client, timeoutMs: 30_000 }), windowMs: 60_000, limit: LIMIT, prefix: fresh('fg') }));
    ok(after);
    const b = await admitted(await listen(before.callback()));
    const a = await admitted(await listen(after.callback()));
    expect(b).toEqual({ admitted: LIMIT, refused: SENT - LIMIT });
    expect(a).toEqual(b);
  });

  it('rate-limiter-flexible -> @floodgate/core', async () => {
    // before: a limit and a store outage both reject, told apart by the rejection's type.
    const rl = new RateLimiterRedis({ storeClient: client, keyPrefix: fresh('rlf'), points: LIMIT, duration: 60 });
    const before = express();
    before.use((req, res, next) => {
      rl.consume(req.ip).then(
        () => next(),
        (rejection: unknown) => (rejection instanceof Error ? next(rejection) : void res.status(429).send('limited')),
      );
    });
    before.get('/', (_req, res) => void res.send('ok'));
    // after: the outage is a decision with its reason; nothing is thrown.
    const limiter = createLimiter({ limit: LIMIT, windowMs: '60s', prefix: fresh('fg'), store: new RedisStore({ client, timeoutMs: 30_000 }) });
    const after = express();
    after.use((req, res, next) => {
      limiter.consume(req.ip ?? 'unknown').then((decision) => (decision.allowed ? next() : void res.status(429).send('limited')), next);
    });
    after.get('/', (_req, res) => void res.send('ok'));
    const b = await admitted(await listen(before));
    const a = await admitted(await listen(after));
    expect(b).toEqual({ admitted: LIMIT, refused: SENT - LIMIT });
    expect(a).toEqual(b);
  });
});

/**
 * hono-rate-limiter's RedisStore takes a client of the shape `{ scriptLoad, evalsha(sha, keys,
 * args), decr, del }` (its README's `client` configuration; @upstash/redis and @vercel/kv have it
 * as they are). An app on a self-hosted Redis with ioredis hands it this shim.
 */
function honoRateLimiterClient(redis: Redis) {
  return {
    scriptLoad: (script: string) => redis.script('LOAD', script) as Promise<string>,
    evalsha: (sha: string, keys: string[], args: unknown[]) => redis.evalsha(sha, keys.length, ...keys, ...(args as string[])),
    decr: (key: string) => redis.decr(key),
    del: (key: string) => redis.del(key),
  };
}

describe('docs/migrating.md: hono-rate-limiter -> @floodgate/hono, row by row', () => {
  /** A Hono app with `limiter` on every route; GET / answers the status its request's x-status asks for. */
  async function honoApp(limiter: MiddlewareHandler): Promise<string> {
    const app = new Hono();
    app.use(limiter);
    app.get('/', (c) => c.text('ok', (Number(c.req.header('x-status')) || 200) as 200));
    return listen(getRequestListener(app.fetch));
  }
  const before = (options: Record<string, unknown>) =>
    honoRateLimiter({
      windowMs: 60_000,
      limit: LIMIT,
      keyGenerator: (c: Context) => getConnInfo(c).remote.address ?? '',
      store: new HonoRateLimiterRedisStore({ client: honoRateLimiterClient(client), prefix: `${fresh('hrl')}:` }),
      ...options,
    });
  const after = (options: RateLimitOptions) => floodgateHono({ windowMs: '1m', limit: LIMIT, getConnInfo, prefix: fresh('fg'), store: new RedisStore({ client, timeoutMs: 30_000 }), ...options });
  /** The statuses (and draft-6 headers) of one request per entry of `asked` (the x-status each asks for). */
  async function replies(url: string, asked: number[]) {
    const out: { status: number; limit: string | null; remaining: string | null }[] = [];
    for (const status of asked) {
      const res = await fetch(url, { headers: { 'x-status': String(status) } });
      await res.text();
      out.push({ status: res.status, limit: res.headers.get('ratelimit-limit'), remaining: res.headers.get('ratelimit-remaining') });
    }
    return out;
  }

  it('windowMs, limit, keyGenerator (the client IP), store (RedisStore), standardHeaders draft-6: the same admissions and quota headers', async () => {
    const b = await admitted(await honoApp(before({ standardHeaders: 'draft-6' })));
    const a = await admitted(await honoApp(after({ headers: 'draft-6' })));
    expect(b).toEqual({ admitted: LIMIT, refused: SENT - LIMIT });
    expect(a).toEqual(b);
    const asked = Array(5).fill(200);
    const [rb, ra] = [await replies(await honoApp(before({ limit: 3 })), asked), await replies(await honoApp(after({ limit: 3 })), asked)];
    expect(ra).toEqual(rb);
    expect(ra.map((r) => r.status)).toEqual([200, 200, 200, 429, 429]);
  });

  it('skipSuccessfulRequests -> countOnly: failed; skipFailedRequests -> countOnly: succeeded', async () => {
    const asked = [200, 401, 200, 401, 200, 401, 401, 200];
    for (const [peer, ours] of [
      [{ skipSuccessfulRequests: true }, { countOnly: 'failed' }],
      [{ skipFailedRequests: true }, { countOnly: 'succeeded' }],
    ] as const) {
      const rb = await replies(await honoApp(before({ limit: 2, ...peer })), asked);
      const ra = await replies(await honoApp(after({ limit: 2, ...ours })), asked);
      expect(ra.map((r) => r.status)).toEqual(rb.map((r) => r.status));
    }
  });

  it('skip -> skip; message and statusCode -> handler (the status stays 429)', async () => {
    const skip = (c: Context) => c.req.header('x-internal') === 'yes';
    for (const app of [before({ limit: 1, skip }), after({ limit: 1, skip })]) {
      const url = await honoApp(app as MiddlewareHandler);
      const statuses = [];
      for (const internal of ['yes', 'yes', 'yes', 'no', 'no']) statuses.push((await fetch(url, { headers: { 'x-internal': internal } })).status);
      expect(statuses).toEqual([200, 200, 200, 200, 429]);
    }
    const bodies = [];
    for (const app of [before({ limit: 1, message: { error: 'slow down' } }), after({ limit: 1, handler: () => ({ error: 'slow down' }) })]) {
      const url = await honoApp(app as MiddlewareHandler);
      await fetch(url);
      const res = await fetch(url);
      bodies.push({ status: res.status, body: await res.json() });
    }
    expect(bodies[1]).toEqual(bodies[0]);
  });

  it("refuses hono-rate-limiter's option names, naming the Floodgate one", () => {
    expect(() => floodgateHono({ keyGenerator: () => 'k' } as never)).toThrow(/did you mean `key`\?/);
    expect(() => floodgateHono({ standardHeaders: 'draft-6' } as never)).toThrow(/did you mean `headers`\?/);
    expect(() => floodgateHono({ skipSuccessfulRequests: true } as never)).toThrow(/did you mean `countOnly`\?/);
    expect(() => floodgateHono({ message: 'no' } as never)).toThrow(/did you mean `handler`\?/);
  });
});
