// A lone lean request's script call is encoded once per subject, limits, cost and mode (protocol.ts LONE): the same call and EVALSHA arguments again, never another request's.
import type { StoreLimit } from '../src/algorithms/registry';
import type { StoreRequest } from '../src';
import { encodeGroupsOf, resolveLimits, SCRIPTS } from '../src/internal';

const same = (request: StoreRequest): StoreRequest => request;
const one = (request: StoreRequest) => encodeGroupsOf([[request]], same);
// A limiter's limits array: one array for all its requests (the kept call is found by it).
const LIMITS: readonly StoreLimit[] = [{ algorithm: 'sliding-window-counter', capacity: 5, windowMs: 60_000 }];
const OTHERS: readonly StoreLimit[] = [{ algorithm: 'sliding-window-counter', capacity: 7, windowMs: 60_000 }];
const keys = (subject: string): readonly string[] => [`lone:{${subject}}:default.swc`];
const request = (subjectKeys: readonly string[], extra: Partial<StoreRequest> = {}): StoreRequest => ({ keys: subjectKeys, limits: LIMITS, cost: 1, mode: 'consume', ...extra });

describe('a lone request\'s call, kept per subject', () => {
  it('the same keys, limits, cost and mode: the same call, its ARGV and EVALSHA arguments all strings', () => {
    const k = keys('a');
    const first = one(request(k));
    // Before: a new call (and new arguments) per request.
    expect(one(request(k))).toBe(first);
    // A consume of cost 1 goes to the one-decision script: capacity and period only (protocol.ts oneCall).
    expect(first.script).toBe(SCRIPTS['sliding-window-counter/one']);
    expect(first.argv).toEqual(['5', '60000']);
    expect(first.shaArgs).toEqual([first.script.sha, '1', k[0], '5', '60000']);
  });

  it('another cost, mode, limits array or subject: its own call, never the kept one', () => {
    const k = keys('b');
    const kept = one(request(k));
    const cases: [string, StoreRequest, string[]][] = [
      ['cost 3', request(k, { cost: 3 }), ['5', '60000', '3']],
      // A peek goes to the lean script: mode, cost, algorithm id, capacity, period.
      ['peek', request(k, { mode: 'peek' }), ['p', '1', '3', '5', '60000']],
      ['other limits', request(k, { limits: OTHERS }), ['7', '60000']],
    ];
    for (const [label, r, argv] of cases) expect({ label, argv: one(r).argv }).toEqual({ label, argv });
    const c = keys('c');
    expect(one(request(c)).keys).toEqual(c);
    // Each request replaces the subject's kept call: the first shape is encoded afresh, and right.
    expect(one(request(k))).not.toBe(kept);
    expect(one(request(k)).argv).toEqual(['5', '60000']);
  });

  it('never kept: a lease token, a lock-out, a test clock, several requests, a calendar window (its boundaries follow the clock)', () => {
    const k = keys('d');
    const lockout = { after: 3, baseMs: 1_000, maxMs: 60_000, forgetMs: 600_000, key: 'lone:{d}:lock' };
    expect(one(request(k, { lockout }))).not.toBe(one(request(k, { lockout })));
    expect(encodeGroupsOf([[request(k)]], same, 5)).not.toBe(encodeGroupsOf([[request(k)]], same, 5));
    expect(encodeGroupsOf([[request(k), request(k)]], same)).not.toBe(encodeGroupsOf([[request(k), request(k)]], same));
    expect(one(request(k, { token: 'Lk1' }))).not.toBe(one(request(k, { token: 'Lk1' })));
    const daily = resolveLimits([{ name: 'q', limit: 5, window: { every: 'day', timeZone: 'UTC' } }])[0].store;
    const calendar = request(k, { limits: [daily] });
    expect(one(calendar)).not.toBe(one(calendar));
  });
});
