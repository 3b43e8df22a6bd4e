// RedisStore over HTTP on workerd (miniflare): a Hono Worker with @upstash/redis against a real redis-server behind the local REST server; 8 clients x 100 concurrent requests for one subject admit exactly 100.
import { readFileSync } from 'node:fs';
import { startRedis, startRedisRest, type RedisRestServer, type RedisServer } from '@floodgate/testing';
import { Miniflare } from 'miniflare';
import { HTTP_LIMITS } from '../app/redis-http-worker';
import { bundle } from './bundle';
import { dispatch } from './dispatch';

/**
 * Requests per client. The 8 clients reach the limit together within their first 13 or so requests,
 * 8 in flight at the crossing, where an over-admission would happen; 8 x the limit in all leaves 700
 * denials after it. (400 each made 2,800 more denials of the same subject, which only repeated them.)
 */
const PER_CLIENT = 100;

let server: RedisServer;
let rest: RedisRestServer;
let script: string;

beforeAll(async () => {
  server = await startRedis();
  rest = await startRedisRest(server);
  script = readFileSync(await bundle('redis-http-worker.ts'), 'utf8');
}, 60_000);

afterAll(async () => {
  await rest?.stop();
  await server?.stop();
});

// The default (on Workers: no coalescing across invocations) and coalesce: false, each in a Worker of its own.
it.each(['default', 'false'])(`8 clients x ${PER_CLIENT} concurrent requests for one subject at a limit of 100 admit exactly 100 (coalesce: %s)`, async (coalesce) => {
  const mf = new Miniflare({
    modules: true,
    script,
    compatibilityDate: '2025-07-01',
    bindings: { REST_URL: rest.url, REST_TOKEN: rest.token, COALESCE: coalesce, PREFIX: `edge-http-${coalesce}-${Math.random().toString(36).slice(2, 8)}` },
  });
  try {
    const counts = { admitted: 0, limited: 0, other: 0 };
    const client = async () => {
      for (let i = 0; i < PER_CLIENT; i++) {
        const res = await dispatch(mf, 'http://worker/race');
        await res.arrayBuffer();
        if (res.status === 200) counts.admitted++;
        else if (res.status === 429) counts.limited++;
        else counts.other++;
      }
    };
    await Promise.all(Array.from({ length: 8 }, client));
    expect(counts).toEqual({ admitted: HTTP_LIMITS.race, limited: 8 * PER_CLIENT - HTTP_LIMITS.race, other: 0 });
  } finally {
    await mf.dispose();
  }
}, 120_000);
