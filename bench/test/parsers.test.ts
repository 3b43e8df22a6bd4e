// Small parsers the bench depends on: redis-benchmark CSV, INFO fields, command counts, CPU profiles.
import { parseRedisBenchmarkCsv } from '../src/redis-ceiling';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PEERS, commandsBetween, contendersFor, parseRedisCpu, primaryAlgorithm, probeHeaders, rateLimitHeaders, storeTrouble, type ThroughputSettings } from '../src/throughput';
import { areaOf, summarize } from '../src/profile';
import { median, pairedRatio, ratio } from '../src/stats';
import { FRAMEWORKS } from '../src/frameworks';

describe('bench parsers', () => {
  it('reads requests per second from redis-benchmark --csv', () => {
    const csv = '"test","rps","avg_latency_ms"\n"evalsha abc 1 k c  3","36900.37","0.185"\n';
    expect(parseRedisBenchmarkCsv(csv)).toBeCloseTo(36900.37);
    expect(() => parseRedisBenchmarkCsv('"test","rps"\n')).toThrow(/no rps/);
  });

  it("sums redis-server's user and system CPU from INFO cpu", () => {
    expect(parseRedisCpu('# CPU\r\nused_cpu_sys:1.500000\r\nused_cpu_user:2.250000\r\n')).toBeCloseTo(3.75);
  });

  it("counts commands between two commandstats snapshots, leaving out the bench's own", () => {
    expect(commandsBetween({ evalsha: 10, info: 3 }, { evalsha: 25, hset: 15, info: 9, config: 1 })).toBe(30);
  });

  it("finds Floodgate's store-failure report in a server log", () => {
    const dir = mkdtempSync(join(tmpdir(), 'fgb-test-'));
    const clean = join(dir, 'clean.log');
    const troubled = join(dir, 'troubled.log');
    writeFileSync(clean, 'redis: connected\n[floodgate] RedisStore: the ioredis client resends unanswered commands\n');
    writeFileSync(troubled, 'x\n[floodgate] store "redis" failed 5 times in a row (FG_STORE_TIMEOUT); circuit open\n');
    expect(storeTrouble(clean)).toBeUndefined();
    expect(storeTrouble(troubled)).toMatch(/^\[floodgate\] store "redis" failed 5 times/);
    expect(storeTrouble(join(dir, 'missing.log'))).toBeUndefined();
  });

  it('medians and ratios refuse to invent numbers', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 2, 3])).toBe(2.5);
    expect(median([])).toBeNaN();
    expect(ratio(1, 0)).toBeNaN();
    expect(ratio(1, 4)).toBe(0.25);
  });

  it('summarises a CPU profile by function and area, after a start time', () => {
    const profile = {
      nodes: [
        { id: 1, callFrame: { functionName: '(root)', url: '', lineNumber: -1 } },
        { id: 2, callFrame: { functionName: 'decide', url: 'file:///w/packages/core/src/limiter.ts', lineNumber: 9 } },
        { id: 3, callFrame: { functionName: 'write', url: 'file:///w/node_modules/.pnpm/ioredis@5.9.3/node_modules/ioredis/built/Redis.js', lineNumber: 0 } },
        { id: 4, callFrame: { functionName: '(idle)', url: '', lineNumber: -1 } },
      ],
      samples: [4, 2, 2, 3, 4],
      startTime: 1000,
      timeDeltas: [10, 10, 10, 10, 10],
    };
    const all = summarize(profile);
    expect(all.top[0]).toMatchObject({ functionName: 'decide', selfPercent: 40, line: 10, url: 'packages/core/src/limiter.ts' });
    expect(all.byArea).toEqual(
      expect.arrayContaining([{ area: '@floodgate/core', selfPercent: 40 }, { area: 'ioredis', selfPercent: 20 }, { area: '(idle)', selfPercent: 40 }]),
    );
    // Samples at 1010 and 1020 are before the mark: left out.
    const later = summarize(profile, 15, 1025);
    expect(later.byArea).toEqual(
      expect.arrayContaining([{ area: '@floodgate/core', selfPercent: 33.3 }, { area: 'ioredis', selfPercent: 33.3 }, { area: '(idle)', selfPercent: 33.3 }]),
    );
    expect(areaOf('node:internal/stream', 'x')).toBe('node internals');
    expect(areaOf('file:///a/bench/src/server.ts', 'x')).toBe('bench harness');
  });

  it('pairs each round with the ceiling of the same round, so a slow round does not skew the ratio', () => {
    // The machine slows to half speed in round 2: the contender keeps 0.8 of the ceiling every round.
    const ceiling = [10_000, 10_000, 5_000, 5_000, 10_000, 10_000];
    const contender = [8_000, 4_000, 8_000];
    expect(pairedRatio(contender, ceiling, 2)).toBeCloseTo(0.8);
    // Rounds read 0.8, 0.8 and 0.4: the median is 0.8, where the ratio of the two medians reads 0.4.
    expect(pairedRatio([8_000, 4_000, 4_000], ceiling, 2)).toBeCloseTo(0.8);
    expect(ratio(median([8_000, 4_000, 4_000]), median(ceiling))).toBeCloseTo(0.4);
    expect(pairedRatio([], ceiling, 2)).toBeNaN();
    expect(pairedRatio([1_000], [], 2)).toBeNaN();
  });

  it('pairs a reference measured twice a round with a contender measured twice a round (the per-turn floor)', () => {
    // The floor runs twice a round like the ceiling: its figure for a round is the mean of its two runs.
    expect(pairedRatio([9_000, 7_000, 4_000, 6_000], [10_000, 10_000, 5_000, 5_000], 2, 2)).toBeCloseTo(0.9);
    // A contender against the floor: 8,000 / mean(9,000, 7,000) = 1.0, then 4,000 / 5,000 = 0.8; median 0.9.
    expect(pairedRatio([8_000, 4_000], [9_000, 7_000, 4_000, 6_000], 2)).toBeCloseTo(0.9);
  });

  it('picks the rate-limit headers out of a response, in one order, whatever their case', () => {
    expect(rateLimitHeaders(['Content-Type', 'x-ratelimit-reset', 'X-RateLimit-Limit', 'x-ratelimit-remaining', 'Retry-After', 'Date'])).toEqual([
      'X-RateLimit-Limit',
      'X-RateLimit-Remaining',
      'X-RateLimit-Reset',
      'Retry-After',
    ]);
    expect(rateLimitHeaders(['ratelimit-policy', 'RateLimit', 'ratelimit-limit'])).toEqual(['RateLimit-Limit', 'RateLimit-Policy', 'RateLimit']);
    // Names it does not know but that mention a rate limit are kept as the server spelled them.
    expect(rateLimitHeaders(['Rate-Limit-Total', 'X-Powered-By', 'Rate-Limit-Remaining', 'rate-limit-total'])).toEqual(['Rate-Limit-Remaining', 'Rate-Limit-Total']);
    expect(rateLimitHeaders(['Content-Length', 'Connection'])).toEqual([]);
  });

  describe('probeHeaders, against a server on 127.0.0.1', () => {
    let server: Server;
    let url: string;
    let served = 0;
    beforeAll(async () => {
      // Limit 1: the first request is admitted with X-RateLimit-*, later ones get a 429 with Retry-After too.
      server = createServer((_req, res) => {
        served++;
        res.setHeader('X-RateLimit-Limit', '1');
        res.setHeader('X-RateLimit-Remaining', '0');
        if (served > 1) {
          res.setHeader('Retry-After', '60');
          res.statusCode = 429;
        }
        res.end('ok');
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

    it('reads one admitted response and, when rejecting, one 429', async () => {
      served = 0;
      expect(await probeHeaders(url, 'reject')).toEqual({
        admitted: ['X-RateLimit-Limit', 'X-RateLimit-Remaining'],
        limited: ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'Retry-After'],
      });
      expect(served).toBe(2);
      served = 0;
      expect(await probeHeaders(url, 'admit')).toEqual({ admitted: ['X-RateLimit-Limit', 'X-RateLimit-Remaining'], limited: null });
      expect(served).toBe(1);
      // A server already past its limit: no admitted response to read.
      expect(await probeHeaders(url, 'reject')).toEqual({ admitted: null, limited: ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'Retry-After'] });
    });
  });
});

describe('throughput contenders', () => {
  const settings = (algorithms: ThroughputSettings['algorithms'], hotKeys = true): ThroughputSettings => ({
    frameworks: ['express', 'fastify', 'koa'],
    rounds: 1,
    secondsPerRun: 1,
    warmupSeconds: 1,
    connections: 10,
    algorithms,
    hotKeys,
  });
  const all = ['fixed-window', 'sliding-window-log', 'sliding-window-counter', 'token-bucket', 'gcra'] as const;

  it('has the memory group, the Redis group and both floors in every framework, memory peers as their docs build them', () => {
    for (const framework of FRAMEWORKS) {
      const list = contendersFor(framework, settings(all));
      const ids = list.map((c) => c.id);
      expect(ids[0]).toBe(`${framework}/none`);
      expect(ids).toEqual(expect.arrayContaining([`${framework}/redis-floor/admit`, `${framework}/redis-floor-turn/admit`]));
      const memoryPeers = list.filter((c) => c.group === 'peer' && c.store === 'memory' && c.regime === 'admit');
      expect(memoryPeers.map((c) => c.limiter.kind)).toEqual(PEERS[framework].filter((p) => p.store === 'memory').map((p) => p.kind));
      for (const c of memoryPeers) expect(c.limiter.store).toBe('memory');
      for (const c of list.filter((x) => x.group === 'peer' && x.store === 'redis')) expect(c.limiter.store).toBe('redis');
      // Every limiting contender in both regimes; floors admitting only.
      expect(list.filter((c) => c.group === 'floor').map((c) => c.regime)).toEqual(['admit', 'admit']);
      expect(list.filter((c) => c.regime === 'admit' && c.group !== 'floor').length).toBe(list.filter((c) => c.regime === 'reject').length);
    }
    expect(contendersFor('express', settings(all)).filter((c) => c.store === 'memory' && c.group === 'peer' && c.regime === 'admit').map((c) => c.label)).toEqual([
      'express-rate-limit (MemoryStore)',
      'rate-limiter-flexible (RateLimiterMemory)',
    ]);
    expect(contendersFor('koa', settings(all)).find((c) => c.id === 'koa/koa-ratelimit-memory/reject')?.limiter).toMatchObject({ kind: 'koa-ratelimit', store: 'memory', limit: 1 });
  });

  it("runs the memory, OpenTelemetry and hot-key lines on the default algorithm, whatever the run's order", () => {
    expect(primaryAlgorithm(all)).toBe('sliding-window-counter');
    expect(primaryAlgorithm(['gcra', 'token-bucket'])).toBe('gcra');
    const list = contendersFor('fastify', settings(all));
    for (const id of ['fastify/floodgate-memory/admit', 'fastify/floodgate-memory-otel/reject']) {
      expect(list.find((c) => c.id === id)?.limiter.algorithm).toBe('sliding-window-counter');
    }
    expect(list.find((c) => c.group === 'floodgate-hot')?.id).toBe('fastify/floodgate-redis-hot-sliding-window-counter/admit');
    expect(contendersFor('fastify', { ...settings(all), primary: 'gcra' }).find((c) => c.id === 'fastify/floodgate-memory/admit')?.limiter.algorithm).toBe('gcra');
    expect(contendersFor('fastify', settings(['token-bucket'], false)).find((c) => c.id === 'fastify/floodgate-memory/admit')?.label).toBe('Floodgate, memory (token-bucket)');
  });

  it('--coalesce adds a Floodgate-on-Redis contender per mode beside the default, whose row the goals still read', () => {
    const list = contendersFor('koa', { ...settings(['sliding-window-counter']), coalesce: ['in-flight', 'off'] }, 'callers');
    const extra = list.filter((c) => c.limiter.coalesce !== undefined);
    expect(extra.map((c) => [c.id, c.limiter.coalesce])).toEqual([
      ['koa/floodgate-redis-sliding-window-counter-coalesce-in-flight/admit@callers', 'in-flight'],
      ['koa/floodgate-redis-sliding-window-counter-coalesce-off/admit@callers', 'off'],
      ['koa/floodgate-redis-sliding-window-counter-coalesce-in-flight/reject@callers', 'in-flight'],
      ['koa/floodgate-redis-sliding-window-counter-coalesce-off/reject@callers', 'off'],
    ]);
    expect(list.find((c) => c.id === 'koa/floodgate-redis-sliding-window-counter/admit@callers')?.limiter.coalesce).toBeUndefined();
  });
});

