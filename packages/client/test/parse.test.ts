// The parsers, one dialect at a time, on the exact field values servers send (pure functions, fixed clocks).
import {
  parseRateLimit,
  parseRetryAfter,
  resetToMs,
  parseProblemDetails,
  isProblemJson,
  fieldLookup,
  PROBLEM_TYPES,
} from '../src/parse';

const NOW = Date.parse('2026-12-01T12:00:00.000Z');

describe('draft-10 (and 8, 9): RateLimit and RateLimit-Policy lists', () => {
  it('pairs several named policies by name, with q, w, r and t', () => {
    const info = parseRateLimit(
      {
        'ratelimit-policy': '"burst";q=10;w=1, "hourly";q=1000;w=3600',
        ratelimit: '"burst";r=3;t=1, "hourly";r=900;t=1800',
      },
      { nowMs: NOW },
    );
    expect(info.dialect).toBe('draft-10');
    expect(info.quotas).toEqual([
      { policy: 'burst', unit: 'requests', limit: 10, windowMs: 1000, remaining: 3, resetMs: 1000, resetConvention: 'delta-seconds' },
      { policy: 'hourly', unit: 'requests', limit: 1000, windowMs: 3_600_000, remaining: 900, resetMs: 1_800_000, resetConvention: 'delta-seconds' },
    ]);
  });

  it("reads the names an open change to draft-11 proposes: a (available quota) and w (effective window) in RateLimit", () => {
    const info = parseRateLimit({ 'ratelimit-policy': '"default";q=10;w=2', ratelimit: '"default";a=4;w=1' }, { nowMs: NOW });
    expect(info.dialect).toBe('draft-10');
    expect(info.quotas).toEqual([{ policy: 'default', unit: 'requests', limit: 10, windowMs: 2000, remaining: 4, resetMs: 1000, resetConvention: 'delta-seconds' }]);
  });

  it('believes the smaller quota and the later time when r/a and t/w disagree (hostile or half-migrated servers)', () => {
    const info = parseRateLimit({ ratelimit: '"p";r=9;a=2;t=1;w=30, "q";a=0;r=5;w=0;t=4' }, { nowMs: NOW });
    expect(info.quotas.map((q) => [q.policy, q.remaining, q.resetMs])).toEqual([
      ['p', 2, 30_000],
      ['q', 0, 4000],
    ]);
  });

  it('ignores hostile a/w values as it ignores hostile r/t: negative, strings, booleans, a malformed field', () => {
    const info = parseRateLimit({ ratelimit: '"neg";a=-1;w=2, "str";a="9";w=1, "bool";a=?1, "ok";a=1;w=-5' }, { nowMs: NOW });
    // No usable available quota: the item is skipped; a bad w is no reset at all (never a negative wait).
    expect(info.quotas).toEqual([{ policy: 'ok', unit: 'requests', remaining: 1 }]);
    // An inner list as a parameter is not a structured field: the whole field is ignored, as the draft says.
    expect(parseRateLimit({ ratelimit: '"x";a=(1 2);w=1' }, { nowMs: NOW }).quotas).toEqual([]);
  });

  it('keeps one state per partition key: two partitions of one policy are two quotas', () => {
    const info = parseRateLimit(
      {
        'ratelimit-policy': '"peruser";q=100;w=60;pk=:dXNlcjE=:, "peruser";q=50;w=60;pk=:dXNlcjI=:',
        ratelimit: '"peruser";r=7;t=10;pk=:dXNlcjI=:, "peruser";r=70;t=20;pk=:dXNlcjE=:',
      },
      { nowMs: NOW },
    );
    expect(info.quotas.map((q) => [q.policy, q.partition, q.limit, q.remaining, q.resetMs])).toEqual([
      ['peruser', 'dXNlcjI=', 50, 7, 10_000],
      ['peruser', 'dXNlcjE=', 100, 70, 20_000],
    ]);
  });

  it("reads express-rate-limit's draft-8 fields (a pk on the policy only, spaces after ';')", () => {
    const info = parseRateLimit(
      { 'ratelimit-policy': '"10-in-2sec"; q=10; w=2; pk=:ZTNiMGM0NDI5OGZj:', ratelimit: '"10-in-2sec"; r=0; t=2' },
      { nowMs: NOW },
    );
    expect(info.dialect).toBe('draft-10');
    expect(info.quotas).toEqual([
      { policy: '10-in-2sec', partition: 'ZTNiMGM0NDI5OGZj', unit: 'requests', limit: 10, windowMs: 2000, remaining: 0, resetMs: 2000, resetConvention: 'delta-seconds' },
    ]);
  });

  it('reads the quota unit, with the older names of the units mapped to the current ones', () => {
    const info = parseRateLimit(
      {
        'ratelimit-policy': '"conc";q=4;qu="concurrent-requests", "old";q=2;qu="concurrency", "bytes";q=65535;qu="content-bytes";w=10',
        ratelimit: '"conc";r=1, "bytes";r=100;t=3',
      },
      { nowMs: NOW },
    );
    expect(info.quotas.map((q) => [q.policy, q.unit, q.limit, q.remaining])).toEqual([
      ['conc', 'concurrent-requests', 4, 1],
      ['bytes', 'content-bytes', 65535, 100],
      ['old', 'concurrent-requests', 2, undefined],
    ]);
  });

  it('accepts Token names (draft-8 allowed them) and a RateLimit item without a policy item', () => {
    const info = parseRateLimit({ ratelimit: 'default;r=50;t=30' }, { nowMs: NOW });
    expect(info.dialect).toBe('draft-10');
    expect(info.quotas).toEqual([{ policy: 'default', unit: 'requests', remaining: 50, resetMs: 30_000, resetConvention: 'delta-seconds' }]);
  });

  it('joins a list split over several field lines', () => {
    const info = parseRateLimit({ ratelimit: ['"a";r=1;t=1', '"b";r=2;t=2'] }, { nowMs: NOW });
    expect(info.quotas.map((q) => q.policy)).toEqual(['a', 'b']);
  });

  it('ignores malformed fields, as the draft requires, and falls back to another dialect', () => {
    const info = parseRateLimit({ ratelimit: '"unterminated;r=1', 'ratelimit-remaining': '4', 'ratelimit-reset': '3' }, { nowMs: NOW });
    expect(info.dialect).toBe('draft-6');
    expect(info.quotas).toEqual([{ policy: '', unit: 'requests', remaining: 4, resetMs: 3000, resetConvention: 'delta-seconds' }]);
    // An item without r is no service limit; a negative r is malformed.
    expect(parseRateLimit({ ratelimit: '"a";t=1, "b";r=-1;t=1' }, { nowMs: NOW }).quotas).toEqual([]);
  });
});

describe('draft-7: the combined RateLimit dictionary', () => {
  it('reads limit, remaining and reset, and the window from RateLimit-Policy', () => {
    const info = parseRateLimit({ ratelimit: 'limit=10, remaining=9, reset=2', 'ratelimit-policy': '10;w=2' }, { nowMs: NOW });
    expect(info.dialect).toBe('draft-7');
    expect(info.quotas).toEqual([{ policy: '', unit: 'requests', limit: 10, windowMs: 2000, remaining: 9, resetMs: 2000, resetConvention: 'delta-seconds' }]);
  });
});

describe('draft-6: RateLimit-Limit, -Remaining, -Reset', () => {
  it('reads the three fields (Headers, any case) and the window from RateLimit-Policy', () => {
    const headers = new Headers({ 'RateLimit-Limit': '10', 'RateLimit-Remaining': '0', 'RateLimit-Reset': '2', 'RateLimit-Policy': '10;w=2' });
    const info = parseRateLimit(headers, { nowMs: NOW });
    expect(info.dialect).toBe('draft-6');
    expect(info.quotas).toEqual([{ policy: '', unit: 'requests', limit: 10, windowMs: 2000, remaining: 0, resetMs: 2000, resetConvention: 'delta-seconds' }]);
  });

  it('takes the first number of an older draft\'s list limit (`10, 10;w=1`)', () => {
    expect(parseRateLimit({ 'RateLimit-Limit': '10, 10;w=1', 'RateLimit-Remaining': '5' }, { nowMs: NOW }).quotas[0].limit).toBe(10);
  });

  it('prefers draft-10 when a response sends both (they describe the same limits)', () => {
    const info = parseRateLimit(
      { 'ratelimit-limit': '10', 'ratelimit-remaining': '3', 'ratelimit-reset': '2', 'ratelimit-policy': '"default";q=10;w=2', ratelimit: '"default";r=3;t=2' },
      { nowMs: NOW },
    );
    expect(info.dialect).toBe('draft-10');
    expect(info.quotas).toHaveLength(1);
  });
});

describe('X-RateLimit-*: the reset as delta seconds, Unix seconds or Unix ms', () => {
  it('reads a small reset as delta seconds (@fastify/rate-limit)', () => {
    const info = parseRateLimit({ 'x-ratelimit-limit': '10', 'x-ratelimit-remaining': '9', 'x-ratelimit-reset': '2' }, { nowMs: NOW });
    expect(info.dialect).toBe('x-ratelimit');
    expect(info.quotas[0]).toMatchObject({ limit: 10, remaining: 9, resetMs: 2000, resetConvention: 'delta-seconds' });
  });

  it('reads a Unix time in seconds against the Date field, not the client clock (express-rate-limit, GitHub)', () => {
    const serverNow = NOW - 3_600_000; // the client's clock is an hour fast: it must not matter
    const headers = {
      date: new Date(serverNow).toUTCString(),
      'x-ratelimit-limit': '10',
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': String(Math.ceil((serverNow + 1500) / 1000)),
    };
    const info = parseRateLimit(headers, { nowMs: NOW });
    expect(info.quotas[0].resetConvention).toBe('epoch-seconds');
    // 1.5 s, sent rounded up to the second (2 s), read as the end of that second: never early.
    expect(info.quotas[0].resetMs).toBe(3000);
  });

  it('reads a Unix time in seconds against the client clock when there is no Date field', () => {
    const info = parseRateLimit({ 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String((NOW + 7000) / 1000) }, { nowMs: NOW });
    expect(info.quotas[0]).toMatchObject({ resetMs: 8000, resetConvention: 'epoch-seconds' });
    // Fractional Unix seconds name a moment (koa-ratelimit's memory driver): taken as they are.
    expect(parseRateLimit({ 'x-ratelimit-reset': String((NOW + 7250) / 1000), 'x-ratelimit-remaining': '0' }, { nowMs: NOW }).quotas[0].resetMs).toBe(7250);
  });

  it('reads a Unix time in ms (some APIs send milliseconds)', () => {
    const info = parseRateLimit({ 'X-RateLimit-Remaining': '3', 'X-RateLimit-Reset': String(NOW + 1234), 'X-RateLimit-Limit': '10' }, { nowMs: NOW });
    expect(info.quotas[0]).toMatchObject({ resetMs: 1234, resetConvention: 'epoch-ms', remaining: 3 });
  });

  it('gives 0, never a negative wait, for a reset already past', () => {
    expect(parseRateLimit({ 'x-ratelimit-reset': String(NOW / 1000 - 50), 'x-ratelimit-remaining': '0' }, { nowMs: NOW }).quotas[0].resetMs).toBe(0);
  });
});

describe("Floodgate's reset to the ms (floodgate-t-ms on draft-10, Floodgate-Reset-Ms beside draft-6 and X-RateLimit-*)", () => {
  it('reads the ms in place of the whole seconds when they agree', () => {
    const d10 = parseRateLimit({ 'ratelimit-policy': '"default";q=10;w=2', ratelimit: '"default";r=0;t=1;floodgate-t-ms=184' }, { nowMs: NOW });
    expect(d10.quotas).toEqual([{ policy: 'default', unit: 'requests', limit: 10, windowMs: 2000, remaining: 0, resetMs: 184, resetConvention: 'delta-seconds' }]);
    const d6 = parseRateLimit({ 'ratelimit-limit': '10', 'ratelimit-remaining': '0', 'ratelimit-reset': '1', 'floodgate-reset-ms': '184' }, { nowMs: NOW });
    expect(d6.quotas).toEqual([{ policy: '', unit: 'requests', limit: 10, remaining: 0, resetMs: 184, resetConvention: 'delta-seconds' }]);
    // A Unix second rounded up (Floodgate's legacy): the moment lies within the second before the one named.
    const at = NOW + 1184;
    const legacy = parseRateLimit({ 'x-ratelimit-limit': '10', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(Math.ceil(at / 1000)), 'floodgate-reset-ms': '1184' }, { nowMs: NOW });
    expect(legacy.quotas).toEqual([{ policy: '', unit: 'requests', limit: 10, remaining: 0, resetMs: 1184, resetConvention: 'epoch-seconds' }]);
  });

  it('ignores ms that disagree with the whole seconds (later than they say, or a second or more earlier), or are not a whole number', () => {
    const d10 = (param: string) => parseRateLimit({ ratelimit: `"default";r=0;t=2;${param}` }, { nowMs: NOW }).quotas[0].resetMs;
    expect([d10('floodgate-t-ms=1500'), d10('floodgate-t-ms=2001'), d10('floodgate-t-ms=1000'), d10('floodgate-t-ms=1.5'), d10('floodgate-t-ms=-5'), d10('floodgate-t-ms="900"')]).toEqual([1500, 2000, 2000, 2000, 2000, 2000]);
    const d6 = (ms: string) => parseRateLimit({ 'ratelimit-remaining': '0', 'ratelimit-reset': '2', 'floodgate-reset-ms': ms }, { nowMs: NOW }).quotas[0].resetMs;
    expect([d6('1500'), d6('2001'), d6('1000'), d6('1.5'), d6('-5'), d6('soon')]).toEqual([1500, 2000, 2000, 2000, 2000, 2000]);
  });
});

describe('resetToMs: the rule that tells delta seconds from Unix times', () => {
  it.each([
    [0, 0, 'delta-seconds'],
    [59, 59_000, 'delta-seconds'],
    [999_999_999, 999_999_999_000, 'delta-seconds'],
  ])('%d is delta seconds', (value, ms, convention) => {
    expect(resetToMs(value, NOW)).toEqual({ ms, convention });
  });
  it('1e9 and above is a Unix time in seconds (a whole one read as the end of that second), 1e12 and above in ms', () => {
    expect(resetToMs(NOW / 1000 + 10, NOW)).toEqual({ ms: 11_000, convention: 'epoch-seconds' });
    // Rounded down by the server (koa-ratelimit): the moment was up to a second later; never early.
    expect(resetToMs(Math.floor((NOW + 10_700) / 1000), NOW).ms).toBeGreaterThanOrEqual(10_700);
    expect(resetToMs(NOW + 10, NOW)).toEqual({ ms: 10, convention: 'epoch-ms' });
  });
  it("reads a Unix time against the client's clock when it lies within the second Date names, else against Date", () => {
    const date = NOW; // Date: 12:00:00 (whole seconds, rounded down by the server)
    const reset = NOW / 1000 + 2; // 12:00:02, taken as its end: 12:00:03
    // The client's clock at 12:00:00.700 agrees with Date: the 700 ms already gone are not waited again.
    expect(resetToMs(reset, NOW + 700, date).ms).toBe(2300);
    // A client clock off Date (ahead or behind): the server's own clock decides, never early.
    expect(resetToMs(reset, NOW + 5000, date).ms).toBe(3000);
    expect(resetToMs(reset, NOW - 1, date).ms).toBe(3000);
  });
});

describe('Retry-After', () => {
  it('reads delay-seconds', () => {
    expect(parseRetryAfter('46', NOW)).toBe(46_000);
    expect(parseRetryAfter(' 0 ', NOW)).toBe(0);
  });
  it('reads an HTTP-date against the Date field when present, else the client clock', () => {
    const at = new Date(NOW + 5000).toUTCString();
    expect(parseRetryAfter(at, NOW)).toBe(5000);
    expect(parseRetryAfter(at, NOW + 60_000, NOW - 1000)).toBe(6000);
    expect(parseRetryAfter(new Date(NOW - 5000).toUTCString(), NOW)).toBe(0);
  });
  it('ignores malformed values', () => {
    for (const bad of ['-5', '', 'soon', '1e3', '12abc']) expect(parseRetryAfter(bad, NOW)).toBeUndefined();
  });
  it('is part of parseRateLimit, with or without quota fields', () => {
    expect(parseRateLimit({ 'retry-after': '3' }, { nowMs: NOW })).toEqual({ quotas: [], retryAfterMs: 3000 });
  });
});

describe('problem+json bodies', () => {
  it("reads Floodgate's 429 body: the quota-exceeded type and violated-policies", () => {
    const body =
      '{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Quota Exceeded","status":429,"detail":"Too many requests: retry in 46 seconds.","violated-policies":["default"]}';
    expect(parseProblemDetails(body)).toEqual({
      type: PROBLEM_TYPES.quotaExceeded,
      title: 'Quota Exceeded',
      status: 429,
      detail: 'Too many requests: retry in 46 seconds.',
      violatedPolicies: ['default'],
    });
  });
  it('reads a retry hint in seconds from the body, and ignores what is not problem details', () => {
    expect(parseProblemDetails({ type: 'about:blank', status: 503, retryAfter: 2 })?.retryAfterMs).toBe(2000);
    expect(parseProblemDetails('not json')).toBeUndefined();
    expect(parseProblemDetails('[1,2]')).toBeUndefined();
    expect(parseProblemDetails({ 'violated-policies': ['a', 3] })?.violatedPolicies).toEqual(['a']);
  });
  it('recognises the content type', () => {
    expect(isProblemJson('application/problem+json')).toBe(true);
    expect(isProblemJson('application/problem+json; charset=utf-8')).toBe(true);
    expect(isProblemJson('application/json')).toBe(false);
    expect(isProblemJson(undefined)).toBe(false);
  });
});

describe('fieldLookup', () => {
  it('reads Headers, undici objects (lower-case, arrays) and functions alike', () => {
    expect(fieldLookup(new Headers({ A: '1' }))('a')).toBe('1');
    expect(fieldLookup({ a: ['1', '2'] })('a')).toBe('1, 2');
    expect(fieldLookup({ 'X-Mixed': 'v' })('x-mixed')).toBe('v');
    expect(fieldLookup((n) => (n === 'a' ? 'x' : null))('b')).toBeUndefined();
  });
});
