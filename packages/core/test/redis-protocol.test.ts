// The script protocol's encoding and parsing, without Redis: the store's path (encodeGroupsOf over its waiters) writes what encodeGroups writes; EVALSHA's arguments, replies and decisions come out whole, `at` only when charged.
import type { StoreRequest, StoreResult } from '../src';
import { encodeCall, encodeGroups, encodeGroupsOf, evalArgs, parseReply, resolveLimits, toDecision } from '../src/internal';

const limits = resolveLimits([
  { name: 'burst', limit: 10, windowMs: 1_000 },
  { name: 'hour', limit: 100, windowMs: 3_600_000 },
]);
const store = limits.map((l) => l.store);
const lockout = { after: 3, baseMs: 1_000, maxMs: 60_000, forgetMs: 600_000, key: 'fg:{b}:lock' };
const consume = (subject: string, cost = 1, extra: Partial<StoreRequest> = {}): StoreRequest => ({
  keys: [`fg:{${subject}}:burst`, `fg:{${subject}}:hour`],
  limits: store,
  cost,
  mode: 'consume',
  ...extra,
});

describe('encodeGroupsOf: the store encodes from its waiters what encodeGroups encodes from requests', () => {
  const waiting = (groups: StoreRequest[][]) => groups.map((g) => g.map((request) => ({ request, now: undefined })));
  it.each([
    ['one subject, one request', [[consume('a')]]],
    ['one subject, three requests', [[consume('a'), consume('a', 2), consume('a', 0)]]],
    ['three subjects, one with a lock-out and two requests', [[consume('a')], [consume('b', 1, { lockout }), consume('b', 3, { lockout })], [consume('c', 5)]]],
  ])('%s', (_label, groups) => {
    for (const testNow of [undefined, 1_700_000_000_000]) {
      const expected = encodeGroups(groups, testNow, 1_700_000_000_000);
      expect(encodeGroupsOf(waiting(groups), (w) => w.request, testNow, 1_700_000_000_000)).toEqual(expected);
      if (groups.length === 1) expect(encodeCall(groups[0], testNow, 1_700_000_000_000)).toEqual(expected);
    }
  });

  it("a group with the limits of the group before it sends '=' and its costs, not the limits again; a lock-out's group sends them", () => {
    const other = resolveLimits([{ limit: 7, windowMs: 1_000 }]).map((l) => l.store);
    const call = encodeGroups([[consume('a')], [consume('b', 2)], [consume('c', 1, { limits: other, keys: ['fg:{c}:x'] })], [consume('d', 4)], [consume('e', 1, { lockout })], [consume('f', 3)]]);
    // A limit is its algorithm's id, capacity and period: sliding-window-counter, the default, is 3.
    const full = [3, 10, 1_000, 3, 100, 3_600_000];
    expect(call.argv).toEqual(['cM', 2, 1, ...full, '=', 2, 1, 1, 3, 7, 1_000, 2, 4, ...full, '2L', 1, ...full, '3,1000,60000,600000', '=', 3]);
    expect(call.groups).toEqual([1, 1, 1, 1, 1, 1].map((requestCount, g) => ({ limitCount: g === 2 ? 1 : 2, requestCount })));
    expect(call.keys).toHaveLength(2 + 2 + 1 + 2 + 3 + 2);
  });

  it('refunds carry cost:at per request, comma-separated', () => {
    const refunds = [consume('a', 1, { mode: 'refund', at: 1_700_000_000_000 }), consume('a', 2, { mode: 'refund', at: 1_700_000_000_500 })];
    expect(encodeGroupsOf([refunds], (r) => r).argv[1]).toBe('1:1700000000000,2:1700000000500');
  });
});

describe('parseReply and toDecision: whole arrays, `at` only when charged', () => {
  it('a reply of two subjects (one with two requests) parses to one dense result per request', () => {
    const call = encodeGroups([[consume('a')], [consume('b'), consume('b')]]);
    // clock, then per request: allowedAll, lockedMs, then per limit: allowed, remaining, resetMs, retryAfterMs
    const reply = [1_000, 1, 0, 1, 9, 1_000, 0, 1, 99, 3_600_000, 0, 1, 0, 1, 9, 900, 0, 1, 99, 3_500_000, 0, 0, 0, 0, 0, 800, 700, 1, 98, 3_400_000, 0];
    const results = parseReply(reply, call) as StoreResult[];
    expect(results).toHaveLength(3);
    expect(Object.keys(results)).toEqual(['0', '1', '2']);
    for (const r of results) expect(Object.keys(r.results)).toEqual(['0', '1']);
    expect(results[2]).toEqual({
      at: 1_000,
      allowed: false,
      results: [
        { allowed: false, remaining: 0, resetMs: 800, retryAfterMs: 700 },
        { allowed: true, remaining: 98, resetMs: 3_400_000, retryAfterMs: 0 },
      ],
    });
    expect(() => parseReply(reply.slice(1), call)).toThrow(/Unexpected script reply/);
  });

  it("a request its subject's own error failed (-1 and the error's text) is that request's FG_STORE_SCRIPT; the others parse as ever", () => {
    const call = encodeGroups([[consume('a')], [consume('b'), consume('b')]]);
    const failed = 'user_script:12: attempt to perform arithmetic on a nil value';
    const reply = [1_000, 1, 0, 1, 9, 1_000, 0, 1, 99, 3_600_000, 0, -1, failed, 0, 0, 0, 0, 0, 0, 0, 0, -1, failed, 0, 0, 0, 0, 0, 0, 0, 0];
    const [a, b1, b2] = parseReply(reply, call);
    expect(a).toMatchObject({ at: 1_000, allowed: true });
    for (const b of [b1, b2]) {
      expect(b).toBeInstanceOf(Error);
      expect(b).toMatchObject({ code: 'FG_STORE_SCRIPT', message: expect.stringContaining(failed) });
    }
  });

  it('a decision has `at` only when one is given, and the same fields in the same order either way', () => {
    const results = [
      { allowed: true, remaining: 9, resetMs: 1_000, retryAfterMs: 0 },
      { allowed: true, remaining: 99, resetMs: 3_600_000, retryAfterMs: 0 },
    ];
    const charged = toDecision(limits, true, results, 1, undefined, false, 1_000, 1_000);
    const peeked = toDecision(limits, true, results, 1, undefined, false, undefined, 1_000);
    expect(Object.keys(charged)).toEqual(['allowed', 'reason', 'degraded', 'limit', 'remaining', 'resetMs', 'retryAfterMs', 'policy', 'limits', 'at']);
    expect(Object.keys(peeked)).toEqual(['allowed', 'reason', 'degraded', 'limit', 'remaining', 'resetMs', 'retryAfterMs', 'policy', 'limits']);
    expect(charged.at).toBe(1_000);
    expect({ ...charged, at: undefined }).toEqual(peeked);
    expect(Object.keys(charged.limits[0])).toEqual(['policy', 'allowed', 'limit', 'windowMs', 'remaining', 'resetMs', 'retryAfterMs']);
    expect(charged).toMatchObject({ policy: 'burst', remaining: 9, resetMs: 1_000 });
  });
});

describe('evalArgs', () => {
  it('head, the key count, every key, then ARGV: one dense array', () => {
    const call = encodeGroups([[consume('a')], [consume('b', 1, { lockout })]]);
    const args = evalArgs(call, 'sha');
    expect(args).toEqual(['sha', call.keys.length, ...call.keys, ...call.argv]);
    expect(Object.keys(args)).toHaveLength(2 + call.keys.length + call.argv.length);
  });
});
