// @floodgate/client against real servers on real Redis: Floodgate's three adapters and the peers, 60 requests at 10 per 2 s.
import { startRedis, type RedisServer } from '@floodgate/testing';
import { pacedLoop, plainLoop, type LoopResult } from '../src/client-loop';
import { PACING_SERVERS, SERVER_INFO, startPacingServer, type PacingServer } from '../src/client-servers';

const LIMIT = { limit: 10, windowMs: 2000 };
const REQUESTS = 60;

let redis: RedisServer;
const servers: PacingServer[] = [];

beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
  await redis?.stop();
});

describe('the client loop against every server (the 429 counts of pnpm bench:client)', () => {
  // The plain loops first, one at a time (a plain loop is over in a second or two); then every paced
  // loop at once, each server on its own keys, so the table takes one paced loop's time (~25 s) and
  // not ten. The counts do not depend on the timing; the times are the bench's, measured one at a time.
  const results = new Map<string, { paced: LoopResult; plain: LoopResult }>();

  beforeAll(async () => {
    const run = Math.random().toString(36).slice(2, 8);
    const plain = new Map<string, LoopResult>();
    for (const [i, id] of PACING_SERVERS.entries()) {
      const server = await startPacingServer(id, redis.port, `tq${run}${i}`, LIMIT);
      servers.push(server);
      plain.set(id, await plainLoop(server.url, REQUESTS));
    }
    await Promise.all(
      PACING_SERVERS.map(async (id, i) => {
        const server = await startPacingServer(id, redis.port, `tp${run}${i}`, LIMIT);
        servers.push(server);
        results.set(id, { paced: await pacedLoop(server.url, REQUESTS), plain: plain.get(id)! });
      }),
    );
  }, 240_000);

  it.each(PACING_SERVERS.filter((id) => !SERVER_INFO[id].retryAfterOnly))('%s: paced by its quota fields, no 429 (one against a server that rounds Unix-second resets down), every call done', (id) => {
    const { paced, plain } = results.get(id)!;
    // koa-ratelimit rounds its Unix-second reset down: the client reads the start of that second until
    // one refusal shows it, then the end (docs/client.md, "Delta seconds or a Unix time").
    const refusals = id === 'koa-ratelimit' ? 1 : 0;
    expect(paced.tooMany).toBeLessThanOrEqual(refusals);
    expect(paced).toMatchObject({ ok: REQUESTS, errors: 0, sent: REQUESTS + paced.tooMany });
    // The contrast, and the proof the server limits at all: the same calls from a plain fetch, sent at
    // once, are refused but for a window's worth or a few (how many windows the loop spans on a busy machine).
    expect(plain.tooMany).toBeGreaterThanOrEqual(REQUESTS / 3);
    expect(plain.ok + plain.tooMany).toBe(REQUESTS);
  });

  it.each(PACING_SERVERS.filter((id) => SERVER_INFO[id].retryAfterOnly))('%s: only Retry-After, so at most one 429, every call done', (id) => {
    const { paced, plain } = results.get(id)!;
    expect(paced.tooMany).toBeLessThanOrEqual(1);
    expect(paced).toMatchObject({ ok: REQUESTS, errors: 0 });
    expect(plain.tooMany).toBeGreaterThanOrEqual(REQUESTS / 3);
  });
});

describe('the bench:client report', () => {
  const { renderClientTable, spliceBetweenMarkers } = require('../src/client-main') as typeof import('../src/client-main');
  const row = (tooMany: number, ms: number): LoopResult => ({ requests: 60, ok: 60, tooMany, sent: 60 + tooMany, errors: 0, ms });

  it('renders one row per server with the ratio to the fastest the limit allows', () => {
    const table = renderClientTable([{ id: 'koa-ratelimit', paced: row(0, 15_000), plain: { ...row(50, 500), ok: 10 } }], 60, 10, 2000, 'note');
    expect(table).toContain('the last starting 10.0 s after the first');
    expect(table).toMatch(/\| koa-ratelimit \(driver: 'redis'\) \| .* \| 0 \| 60\/60 \| 15\.0 s \| 1\.50 \| missed \(1\.50x > 1\.3x\) \| 50 \| 10\/60 \| 0\.5 s \|/);
  });

  it("checks issue #46's goal per row: at most 1.3x the fastest and one 429; Retry-After only: the 429s alone", () => {
    const { clientGoal } = require('../src/client-main') as typeof import('../src/client-main');
    expect(clientGoal('express-rate-limit-draft-8', row(0, 13_000), 10_000)).toEqual({ met: true, text: 'met' });
    expect(clientGoal('floodgate-express-draft-6', row(1, 12_000), 10_000).met).toBe(true);
    expect(clientGoal('floodgate-express-draft-6', row(0, 13_100), 10_000)).toEqual({ met: false, text: 'missed (1.31x > 1.3x)' });
    expect(clientGoal('floodgate-express-draft-6', row(2, 11_000), 10_000)).toEqual({ met: false, text: 'missed (2 x 429 > 1)' });
    expect(clientGoal('floodgate-express-draft-6', { ...row(0, 11_000), ok: 59 }, 10_000).text).toBe('missed (59/60 done)');
    expect(clientGoal('floodgate-express-retry-after-only', row(1, 25_000), 10_000).met).toBe(true);
    expect(clientGoal('floodgate-express-retry-after-only', row(2, 11_000), 10_000).met).toBe(false);
  });

  it('replaces only what lies between the markers, and refuses a page without them', () => {
    const doc = 'a\n<!-- bench:client:begin -->\nold\n<!-- bench:client:end -->\nb';
    expect(spliceBetweenMarkers(doc, 'new')).toBe('a\n<!-- bench:client:begin -->\nnew\n<!-- bench:client:end -->\nb');
    expect(() => spliceBetweenMarkers('no markers', 'x')).toThrow(/no <!-- bench:client:begin -->/);
  });
});
