// Small parsers the bench depends on: redis-benchmark CSV, INFO fields, command counts, CPU profiles.
import { parseRedisBenchmarkCsv } from '../src/redis-ceiling';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { commandsBetween, parseRedisCpu, storeTrouble } from '../src/throughput';
import { areaOf, summarize } from '../src/profile';
import { median, pairedRatio, ratio } from '../src/stats';

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
});
