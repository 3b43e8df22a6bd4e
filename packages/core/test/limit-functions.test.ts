// Limits that are functions of the request (issue #45): per-subject answers, after the block cache, bounded distinct values, bad answers refused and logged once.
import { createLimiter } from '../src/engine/limiter';
import type { EngineLimiter } from '../src/engine/limiter';
import { limiterFrom } from '../src/engine/limiter';
import { resolveLimiterOptions } from '../src/engine/options';
import { createHttpLimiter } from '../src/http/http-limiter';
import type { RequestFacts } from '../src/identity';
import { MemoryStore } from '../src/stores/memory-store';

const recorder = () => {
  const lines: string[] = [];
  return { lines, logger: { warn: (m: string) => void lines.push(m), error: (m: string) => void lines.push(m) } };
};

async function admitted(consume: () => Promise<{ allowed: boolean }>, n: number): Promise<number> {
  let ok = 0;
  for (let i = 0; i < n; i++) if ((await consume()).allowed) ok++;
  return ok;
}

describe('limit functions in core consume', () => {
  it('gives each subject the limit its function returns, sync or async, on one limiter', async () => {
    const limiter = createLimiter({ store: new MemoryStore(), limit: (subject) => (subject === 'pro' ? 5 : 2) });
    expect(await admitted(() => limiter.consume('free'), 10)).toBe(2);
    expect(await admitted(() => limiter.consume('pro'), 10)).toBe(5);
    const async = createLimiter({ store: new MemoryStore(), limit: async (_s, ctx) => (ctx.scope === 'big' ? 4 : 1) });
    expect(await admitted(() => async.consume('x', { scope: 'big' }), 10)).toBe(4);
    expect(await admitted(() => async.consume('x', { scope: 'small' }), 10)).toBe(1);
  });

  it('reports the limit in force in the decision, and keeps the count when the answer changes', async () => {
    let limit = 10;
    const limiter = createLimiter({ store: new MemoryStore(), limit: () => limit, blockCacheSize: 0 });
    expect(await admitted(() => limiter.consume('s'), 4)).toBe(4);
    limit = 5;
    const d = await limiter.consume('s');
    expect(d).toMatchObject({ allowed: true, limit: 5, remaining: 0 });
    expect((await limiter.consume('s')).allowed).toBe(false);
  });

  it('takes functions per limit in `limits`, and `limits` itself as a function', async () => {
    const perLimit = createLimiter({ store: new MemoryStore(), limits: [{ name: 'burst', limit: () => 3, windowMs: 1000 }, { name: 'hour', limit: 100, windowMs: '1h' }] });
    expect(await admitted(() => perLimit.consume('a'), 10)).toBe(3);
    const whole = createLimiter({ store: new MemoryStore(), limits: (subject) => [{ name: 'plan', limit: subject.length }] });
    expect(await admitted(() => whole.consume('abcd'), 10)).toBe(4);
  });

  it('calls the function after the block cache: a blocked caller costs no call', async () => {
    let calls = 0;
    const limiter = createLimiter({ store: new MemoryStore(), limit: () => (calls++, 1) });
    await limiter.consume('s');
    expect((await limiter.consume('s')).reason).toBe('limited');
    const before = calls;
    for (let i = 0; i < 50; i++) expect((await limiter.consume('s')).reason).toBe('blocked');
    expect(calls).toBe(before);
  });

  it('refuses a bad answer (503, fail-closed), counts nothing, logs once per cause, never throws', async () => {
    const { lines, logger } = recorder();
    let answer: () => unknown = () => 2;
    const limiter = createLimiter({ store: new MemoryStore(), logger, limit: () => answer() as number, blockCacheSize: 0 });
    const bad: [string, () => unknown][] = [
      ['threw', () => { throw new Error('db down'); }],
      ['not-a-number', () => NaN],
      ['below-one', () => -5],
      ['too-large', () => 1e15],
      ['invalid', () => 2.5],
      ['threw', () => Promise.reject(new Error('late'))],
    ];
    for (const [, f] of bad) {
      answer = f;
      for (let i = 0; i < 3; i++) expect(await limiter.consume('s')).toMatchObject({ allowed: false, reason: 'fail-closed', degraded: true, retryAfterMs: 1000 });
    }
    expect(lines.filter((l) => l.includes('FG_LIMIT_FUNCTION_FAILED'))).toHaveLength(5);
    answer = () => 2;
    // Nothing was counted while the answers were bad.
    expect(await admitted(() => limiter.consume('s'), 5)).toBe(2);
  });

  it('caps answers at limitCeiling (logged once) and refuses a static limit above it at construction', async () => {
    const { lines, logger } = recorder();
    const limiter = createLimiter({ store: new MemoryStore(), logger, limitCeiling: 3, limit: () => 1e15 });
    expect(await admitted(() => limiter.consume('s'), 10)).toBe(3);
    expect(lines.filter((l) => l.includes('FG_LIMIT_CAPPED'))).toHaveLength(1);
    expect(() => createLimiter({ limitCeiling: 3, limit: 4 })).toThrow(/limitCeiling/);
    expect(() => createLimiter({ limitValuesMax: 0, limit: () => 1 })).toThrow(/limitValuesMax/);
  });

  it('holds at most limitValuesMax distinct answers (100,000 distinct values), warns once, and still decides each with its own limit', async () => {
    const { lines, logger } = recorder();
    const limiter = limiterFrom(resolveLimiterOptions({ store: new MemoryStore({ maxKeys: 1000 }), logger, limitValuesMax: 100, limit: (subject) => Number(subject) + 1 })) as EngineLimiter;
    for (let i = 0; i < 100_000; i++) limiter.consumeNow(String(i));
    expect(limiter.limitValuesHeld).toBe(100);
    expect(lines.filter((l) => l.includes('FG_LIMIT_VALUES_CEILING'))).toHaveLength(1);
    // Past the ceiling a new value is still its own limit.
    expect(await limiter.consume('200000')).toMatchObject({ allowed: true, limit: 200_001 });
  });

  it('keys a window decided per request apart: a state of one window length is never read with another', async () => {
    const limiter = createLimiter({ store: new MemoryStore(), limit: 2, windowMs: (subject) => (subject === 'a' ? 1000 : 60_000), blockCacheSize: 0 });
    expect(await admitted(() => limiter.consume('a'), 5)).toBe(2);
    expect((await limiter.consume('a')).limits[0].windowMs).toBe(1000);
    expect((await limiter.consume('b')).limits[0].windowMs).toBe(60_000);
  });
});

describe('limit functions through the HTTP pipeline (every adapter)', () => {
  const facts = (plan: string): RequestFacts => ({ ip: '203.0.113.9', headers: { 'x-plan': plan }, method: 'GET', route: '/a' });
  type Req = { plan: string };

  it('takes express-rate-limit\'s `limit: (req) => number` as it is: a header plan gives each plan its own limit', async () => {
    const http = createHttpLimiter<Req>({ store: new MemoryStore(), limit: (req) => (req.plan === 'pro' ? 5 : 2), key: (req) => req.plan });
    const run = async (plan: string) => {
      let ok = 0;
      for (let i = 0; i < 10; i++) if ((await http.handle(facts(plan), { plan })).status === 'next') ok++;
      return ok;
    };
    expect(await run('free')).toBe(2);
    expect(await run('pro')).toBe(5);
  });

  it('a hostile header choosing the plan cannot escape limitCeiling, and the IP stays one subject', async () => {
    const http = createHttpLimiter<Req>({ store: new MemoryStore(), limitCeiling: 3, limit: (req) => Number(req.plan) });
    let ok = 0;
    for (let i = 0; i < 20; i++) if ((await http.handle(facts(String(10 ** i)), { plan: String(10 ** i) })).status === 'next') ok++;
    expect(ok).toBeLessThanOrEqual(3);
  });

  it('answers 503 for a throwing limit function, not a crash', async () => {
    const http = createHttpLimiter<Req>({ store: new MemoryStore(), logger: recorder().logger, limit: () => { throw new Error('no plan'); } });
    const result = await http.handle(facts('x'), { plan: 'x' });
    expect(result.status).toBe(503);
  });
});
