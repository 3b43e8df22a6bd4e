// The resolveKey cache: one lookup per key in flight, TTLs for found and unknown keys, bounds, failures, the block hook.
import { createIdentify, identifyFrom, resolveIdentityOptions, type Identity, type IdentityOptions, type RequestFacts, type ResolvedKey } from '../src/identity';

const facts = (key: string | undefined, ip = '203.0.113.7'): RequestFacts => ({
  ip,
  headers: key === undefined ? {} : { 'x-api-key': key },
  method: 'GET',
  route: '/r',
});

/** A resolveKey that counts its calls and answers from a table; `gate` holds answers back until released. */
function fakeDirectory(table: Record<string, ResolvedKey>) {
  const calls: string[] = [];
  let release: (() => void) | undefined;
  let gate: Promise<void> | undefined;
  return {
    calls,
    hold() {
      gate = new Promise((r) => (release = r));
    },
    release() {
      release?.();
      gate = undefined;
    },
    resolveKey: async (apiKey: string) => {
      calls.push(apiKey);
      if (gate) await gate;
      return table[apiKey] ?? null;
    },
  };
}

function manualClock() {
  let now = 1_000;
  return { clock: () => now, advance: (ms: number) => (now += ms) };
}

const quiet: Pick<IdentityOptions, 'logger'> = { logger: { warn() {}, error() {} } };
const recording = (lines: string[]) => ({ warn: (m: string) => void lines.push(m), error: (m: string) => void lines.push(m) });

describe('resolveKey', () => {
  it('calls resolveKey once for a burst of concurrent first requests with one unknown key', async () => {
    const dir = fakeDirectory({});
    const identify = createIdentify({ ...quiet, resolveKey: dir.resolveKey });
    dir.hold();
    const pending = Array.from({ length: 500 }, () => identify(facts('nobody-issued-this')));
    dir.release();
    const identities = await Promise.all(pending);
    expect(dir.calls).toEqual(['nobody-issued-this']);
    // Default unknownKey 'ip': limited by the client IP, as if no key was sent.
    expect(new Set(identities.map((i) => JSON.stringify(i)))).toEqual(new Set([JSON.stringify({ subject: 'ip:203.0.113.7', kind: 'ip', keyStatus: 'unknown' })]));
  });

  it('calls resolveKey once for a burst with one known key, then answers synchronously from the cache', async () => {
    const dir = fakeDirectory({ k1: { account: 'acct-1' } });
    const identify = createIdentify({ ...quiet, resolveKey: dir.resolveKey });
    const first = await Promise.all(Array.from({ length: 200 }, () => identify(facts('k1'))));
    expect(dir.calls).toHaveLength(1);
    expect(first[0]).toMatchObject({ kind: 'api-key', account: 'acct-1', keyStatus: 'known' });
    const again = identify(facts('k1', '198.51.100.1'));
    expect(again).not.toBeInstanceOf(Promise);
    expect((again as Identity).subject).toBe(first[0].subject);
  });

  it('reuses a found key for ttlMs and an unknown key for the shorter unknownTtlMs', async () => {
    const { clock, advance } = manualClock();
    const dir = fakeDirectory({ good: { account: 1 } });
    const identify = createIdentify({ ...quiet, resolveKey: dir.resolveKey, clock, keyCache: { ttlMs: '60s', unknownTtlMs: '5s' } });
    await identify(facts('good'));
    await identify(facts('bad'));
    expect(dir.calls).toEqual(['good', 'bad']);
    advance(4_999);
    await identify(facts('good'));
    await identify(facts('bad'));
    expect(dir.calls).toHaveLength(2);
    advance(2);
    await identify(facts('good'));
    await identify(facts('bad'));
    expect(dir.calls).toEqual(['good', 'bad', 'bad']);
    advance(55_000);
    await identify(facts('good'));
    expect(dir.calls).toEqual(['good', 'bad', 'bad', 'good']);
  });

  it('keeps the cache bounded', async () => {
    const dir = fakeDirectory({});
    const identify = createIdentify({ ...quiet, resolveKey: dir.resolveKey, keyCache: { max: 50, unknownMax: 50, lookupsPerIp: 10_000 } });
    for (let i = 0; i < 500; i++) await identify(facts(`k${i}`));
    expect(dir.calls).toHaveLength(500);
    // The oldest keys were evicted: asking again looks them up again; the newest were kept.
    await identify(facts('k0'));
    await identify(facts('k499'));
    expect(dir.calls.slice(500)).toEqual(['k0']);
  });

  it('keeps found keys apart from unknown ones: a flood of invented keys never evicts a customer\'s key', async () => {
    const dir = fakeDirectory({ customer: { account: 'c' } });
    const identify = createIdentify({ ...quiet, resolveKey: dir.resolveKey, keyCache: { max: 10, unknownMax: 10 } });
    await identify(facts('customer'));
    // 1,000 invented keys from 1,000 addresses (no per-IP budget spent twice).
    for (let i = 0; i < 1_000; i++) await identify(facts(`invented-${i}`, `198.51.${i >> 8}.${i & 255}`));
    const again = identify(facts('customer'));
    expect(again).not.toBeInstanceOf(Promise); // still cached: answered without a lookup
    expect(dir.calls.filter((k) => k === 'customer')).toHaveLength(1);
  });

  it('bounds lookups of unseen keys per client IP (IPv6: per /64) per window; seen keys spend nothing', async () => {
    const { clock, advance } = manualClock();
    const dir = fakeDirectory({ good: { account: 'g' } });
    const identify = createIdentify({ ...quiet, clock, resolveKey: dir.resolveKey, keyCache: { lookupsPerIp: 3, lookupWindowMs: '1m' } });
    await identify(facts('good'));
    const ids: Identity[] = [];
    for (let i = 0; i < 10; i++) ids.push(await identify(facts(`guess-${i}`)));
    expect(dir.calls).toEqual(['good', 'guess-0', 'guess-1']); // 'good' spent one of the 3
    expect(ids.slice(2).every((id) => id.keyStatus === 'unchecked' && id.subject === 'ip:203.0.113.7')).toBe(true);
    // A key already cached costs no budget; another IP has its own; one /64 is one budget.
    expect(await identify(facts('good'))).toMatchObject({ keyStatus: 'known' });
    await identify(facts('other-ip-key', '203.0.113.8'));
    expect(dir.calls).toContain('other-ip-key');
    for (let i = 0; i < 5; i++) await identify(facts(`v6-${i}`, `2001:db8:9:9::${i + 1}`));
    expect(dir.calls.filter((k) => k.startsWith('v6-'))).toEqual(['v6-0', 'v6-1', 'v6-2']);
    // The window passes: the IP may look up again.
    advance(60_000);
    await identify(facts('guess-late'));
    expect(dir.calls).toContain('guess-late');
  });

  it('asks the block hook about the IP before looking up a key never seen, and skips the lookup when the IP is blocked', async () => {
    const dir = fakeDirectory({});
    const identify = createIdentify({ ...quiet, resolveKey: dir.resolveKey });
    const asked: string[] = [];
    const blockedIp = { isBlocked: (id: Identity) => (asked.push(id.subject), id.subject === 'ip:203.0.113.7') };
    for (let i = 0; i < 300; i++) expect(identify(facts(`fresh-${i}`), blockedIp)).toEqual({ subject: 'ip:203.0.113.7', kind: 'ip', keyStatus: 'unchecked' });
    expect(dir.calls).toHaveLength(0);
    expect(new Set(asked)).toEqual(new Set(['ip:203.0.113.7']));
  });

  it("answers an unknown key with rejected: 'unknown-key' when unknownKey is 'reject'", async () => {
    const dir = fakeDirectory({ good: { account: 1 } });
    const identify = createIdentify({ ...quiet, resolveKey: dir.resolveKey, unknownKey: 'reject' });
    // Counted against the client IP (its subject), answered 401 by the http layer while the IP is within its limit.
    expect(await identify(facts('bad'))).toEqual({ subject: 'ip:203.0.113.7', kind: 'ip', rejected: 'unknown-key', keyStatus: 'unknown' });
    expect(await identify(facts('good'))).not.toHaveProperty('rejected');
    // No key at all is not an unknown key: the request is limited by IP.
    expect(await identify(facts(undefined))).toEqual({ subject: 'ip:203.0.113.7', kind: 'ip' });
  });

  it('treats a key longer than maxApiKeyLength as unknown without a lookup, and warns once', async () => {
    const dir = fakeDirectory({});
    const lines: string[] = [];
    const identify = createIdentify({ resolveKey: dir.resolveKey, maxApiKeyLength: 100, logger: recording(lines) });
    for (let i = 0; i < 3; i++) expect(await identify(facts('x'.repeat(101 + i)))).toMatchObject({ subject: 'ip:203.0.113.7', keyStatus: 'unknown' });
    expect(dir.calls).toHaveLength(0);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('FG_API_KEY_TOO_LONG');
  });

  it('falls back to the IP when resolveKey fails, never caches the failure, and warns once per outage', async () => {
    let fail = true;
    let calls = 0;
    const lines: string[] = [];
    const identify = createIdentify({
      logger: recording(lines),
      resolveKey: (key) => {
        calls++;
        if (fail) throw new Error(`db down for ${key.length}`);
        return { account: 'a' };
      },
    });
    expect(await identify(facts('k'))).toEqual({ subject: 'ip:203.0.113.7', kind: 'ip', keyStatus: 'lookup-failed' });
    expect(await identify(facts('k'))).toMatchObject({ keyStatus: 'lookup-failed' });
    expect(calls).toBe(2);
    expect(lines.filter((l) => l.includes('FG_RESOLVE_KEY_FAILED'))).toHaveLength(1);
    fail = false;
    expect(await identify(facts('k'))).toMatchObject({ kind: 'api-key', account: 'a', keyStatus: 'known' });
    fail = true;
    await identify(facts('other'));
    expect(lines.filter((l) => l.includes('FG_RESOLVE_KEY_FAILED'))).toHaveLength(2);
  });

  it('serves the last answer, even expired, while lookups fail', async () => {
    const { clock, advance } = manualClock();
    let fail = false;
    const identify = createIdentify({
      ...quiet,
      clock,
      keyCache: { ttlMs: 1_000 },
      resolveKey: async () => {
        if (fail) throw new Error('db down');
        return { account: 'a', limits: [{ limit: 5 }] };
      },
    });
    const known = await identify(facts('k'));
    fail = true;
    advance(5_000);
    expect(await identify(facts('k'))).toEqual(known);
  });

  it('treats a result of the wrong shape as a failed lookup', async () => {
    const identify = createIdentify({ ...quiet, resolveKey: (async () => 'acct-1') as unknown as IdentityOptions['resolveKey'] });
    expect(await identify(facts('k'))).toMatchObject({ kind: 'ip', keyStatus: 'lookup-failed' });
  });

  it('stops waiting after resolveTimeoutMs, and caches the answer when it arrives', async () => {
    const dir = fakeDirectory({ slow: { account: 's' } });
    const identify = createIdentify({ ...quiet, resolveKey: dir.resolveKey, resolveTimeoutMs: 30 });
    dir.hold();
    expect(await identify(facts('slow'))).toMatchObject({ kind: 'ip', keyStatus: 'lookup-failed' });
    dir.release();
    await new Promise((r) => setImmediate(r));
    expect(identify(facts('slow'))).toMatchObject({ kind: 'api-key', account: 's' });
    expect(dir.calls).toHaveLength(1);
  });

  it('hands back plan limits with a name that is equal for equal plans', async () => {
    const identify = createIdentify({
      ...quiet,
      resolveKey: async (key) =>
        key === 'pro-1' || key === 'pro-2'
          ? { account: key, limits: key === 'pro-1' ? [{ limit: 1000, windowMs: '1m' }] : [{ windowMs: 60_000, limit: 1000 }] }
          : { account: key, limits: [{ limit: 10 }] },
    });
    const [a, b, c] = await Promise.all([identify(facts('pro-1')), identify(facts('pro-2')), identify(facts('free'))]);
    expect(a.limits).toEqual([{ limit: 1000, windowMs: '1m' }]);
    expect(a.plan).toEqual(expect.any(String));
    expect(b.plan).toBe(a.plan);
    expect(c.plan).not.toBe(a.plan);
  });

  it('gives a key with an invalid plan the route limits, and warns', async () => {
    const lines: string[] = [];
    const identify = createIdentify({
      logger: recording(lines),
      resolveKey: async () => ({ account: 'x', limits: [{ limit: -1 }] }),
    });
    const id = await identify(facts('k'));
    expect(id).toMatchObject({ kind: 'api-key', account: 'x', keyStatus: 'known' });
    expect(id).not.toHaveProperty('limits');
    expect(lines.join('\n')).toContain('FG_RESOLVE_KEY_BAD_PLAN');
  });
});

describe('the block hook comes before the lookup', () => {
  it('skips the lookup for a caller the hook says is blocked, predicting its identity from the expired answer', async () => {
    const { clock, advance } = manualClock();
    const dir = fakeDirectory({ k: { account: 'a', limits: [{ limit: 3 }] } });
    const identify = createIdentify({ ...quiet, clock, resolveKey: dir.resolveKey, keyCache: { ttlMs: 1_000 } });
    const known = await identify(facts('k'));
    advance(10_000);
    const asked: Identity[] = [];
    const blocked = await identify(facts('k'), { isBlocked: (id) => (asked.push(id), true) });
    expect(dir.calls).toHaveLength(1);
    expect(blocked).toEqual(known);
    expect(asked).toEqual([known]);
    // Not blocked: the lookup happens.
    await identify(facts('k'), { isBlocked: () => false });
    expect(dir.calls).toHaveLength(2);
  });

  it('asks about the IP for an unknown key that falls back to the IP', async () => {
    const { clock, advance } = manualClock();
    const dir = fakeDirectory({});
    const identify = createIdentify({ ...quiet, clock, resolveKey: dir.resolveKey });
    await identify(facts('nope'));
    advance(60_000);
    const asked: string[] = [];
    const out = await identify(facts('nope'), { isBlocked: (id) => (asked.push(id.subject), id.subject === 'ip:203.0.113.7') });
    expect(asked).toEqual(['ip:203.0.113.7']);
    expect(out).toMatchObject({ subject: 'ip:203.0.113.7', keyStatus: 'unknown' });
    expect(dir.calls).toHaveLength(1);
  });

  it('is not asked when no lookup is needed', async () => {
    const dir = fakeDirectory({ k: { account: 'a' } });
    const identify = createIdentify({ ...quiet, resolveKey: dir.resolveKey });
    await identify(facts('k'));
    const isBlocked = jest.fn(() => true);
    identify(facts('k'), { isBlocked });
    identify(facts(undefined), { isBlocked });
    expect(isBlocked).not.toHaveBeenCalled();
  });
});

describe('a resolveKey that hangs, and keys re-sent after an unknown answer (issue 40, row 6)', () => {
  /** A resolveKey that never answers (unless aborted, when it counts the abort and stays silent). */
  function hanging() {
    const seen = { calls: 0, aborted: 0 };
    const resolveKey = (_key: string, context?: { signal: AbortSignal }) => {
      seen.calls++;
      context?.signal.addEventListener('abort', () => void seen.aborted++);
      return new Promise<null>(() => undefined);
    };
    return { seen, resolveKey };
  }
  /** identify with its key cache's counts in view (the internal in-flight count included). */
  function withStats(options: IdentityOptions) {
    let stats: { inFlight?: number; lookups: number; failures: number } = { lookups: 0, failures: 0 };
    const identify = identifyFrom(resolveIdentityOptions({ ...quiet, ...options }), (s) => void (stats = s));
    return { identify, stats: () => stats };
  }
  /** 1,000 requests, each a fresh key from its own IP (so no IP's lookup budget is what stops them). */
  const thousand = (round: number) => Array.from({ length: 1_000 }, (_, i) => facts(`invented-${round}-${i}`, `10.${round}.${i >> 8}.${i & 255}`));

  it('keeps lookups in flight at keyCache.maxInFlight; past it a request is answered at once by its IP, never a wait or a budget', () => {
    const { seen, resolveKey } = hanging();
    const { identify, stats } = withStats({ resolveKey, resolveTimeoutMs: '1m', keyCache: { maxInFlight: 100 } });
    const answers = thousand(1).map((f) => identify(f));
    const waiting = answers.filter((a) => a instanceof Promise);
    const atOnce = answers.filter((a) => !(a instanceof Promise)) as Identity[];
    console.log(`row 6 | 1,000 invented keys, resolveKey hangs, maxInFlight 100: ${seen.calls} resolveKey calls, ${stats().inFlight} in flight, ${atOnce.length} answered at once`);
    expect(seen.calls).toBe(100);
    expect(stats().inFlight).toBe(100);
    expect(waiting).toHaveLength(100);
    expect(atOnce).toHaveLength(900);
    expect(stats().failures).toBe(900); // each is a request whose lookup found no free slot (floodgate.key_lookup.failures)
    expect(atOnce.every((id) => id.kind === 'ip' && id.subject.startsWith('ip:10.1.') && id.keyStatus === 'lookup-failed')).toBe(true);
  });

  it('abandons a hanging lookup at resolveTimeoutMs: its slot is freed and its signal aborted, round after round', async () => {
    const { seen, resolveKey } = hanging();
    const { identify, stats } = withStats({ resolveKey, resolveTimeoutMs: 20, keyCache: { maxInFlight: 100 } });
    for (let round = 1; round <= 3; round++) {
      const identities = await Promise.all(thousand(round).map((f) => identify(f)));
      expect(identities.every((id) => id.kind === 'ip' && id.keyStatus === 'lookup-failed')).toBe(true);
      // Every lookup of this round reached its deadline: none still holds a slot.
      expect(stats().inFlight).toBe(0);
    }
    console.log(`row 6 | 3 rounds of 1,000 invented keys, resolveKey hangs, deadline 20 ms: ${seen.calls} calls, ${seen.aborted} aborted, ${stats().inFlight} in flight after`);
    expect(seen.calls).toBe(300);
    expect(seen.aborted).toBe(300);
  });

  it('spends the IP\'s lookup budget on keys answered unknown before: 100 expired unknown keys from one IP cost at most 10 lookups', async () => {
    const { clock, advance } = manualClock();
    const dir = fakeDirectory({});
    const identify = createIdentify({ ...quiet, clock, resolveKey: dir.resolveKey, keyCache: { unknownTtlMs: '10s' } });
    // 100 keys, each answered unknown once (from 100 IPs: each spends one of its own budget).
    for (let i = 0; i < 100; i++) await identify(facts(`known-bad-${i}`, `198.51.100.${i + 1}`));
    expect(dir.calls).toHaveLength(100);
    advance(10_001); // the answers expire; they are still remembered
    const ids: Identity[] = [];
    for (let i = 0; i < 100; i++) ids.push(await identify(facts(`known-bad-${i}`, '203.0.113.99')));
    const lookups = dir.calls.length - 100;
    console.log(`row 6 | one IP re-sending 100 expired unknown keys: ${lookups} lookups (keyCache.lookupsPerIp 10)`);
    expect(lookups).toBe(10);
    expect(ids.every((id) => id.subject === 'ip:203.0.113.99')).toBe(true);
  });

  it('spends it on cached unknown answers too: after 10 of them, a new invented key from that IP is not looked up', async () => {
    const dir = fakeDirectory({});
    const identify = createIdentify({ ...quiet, resolveKey: dir.resolveKey });
    for (let i = 0; i < 10; i++) await identify(facts(`bad-${i}`, `198.51.100.${i + 1}`));
    for (let i = 0; i < 10; i++) expect(identify(facts(`bad-${i}`, '203.0.113.98'))).toMatchObject({ subject: 'ip:203.0.113.98', keyStatus: 'unknown' });
    expect(await identify(facts('fresh-invention', '203.0.113.98'))).toEqual({ subject: 'ip:203.0.113.98', kind: 'ip', keyStatus: 'unchecked' });
    expect(dir.calls).not.toContain('fresh-invention');
  });

  it('does not spend it on a found key, cached or refreshed (a revocation must not wait on a neighbour\'s budget)', async () => {
    const { clock, advance } = manualClock();
    const dir = fakeDirectory({ good: { account: 'g' } });
    const identify = createIdentify({ ...quiet, clock, resolveKey: dir.resolveKey, keyCache: { ttlMs: '1s', lookupsPerIp: 1 } });
    expect(await identify(facts('good'))).toMatchObject({ keyStatus: 'known' });
    for (let i = 0; i < 3; i++) {
      advance(1_001);
      expect(await identify(facts('good'))).toMatchObject({ keyStatus: 'known' });
    }
    expect(dir.calls).toEqual(['good', 'good', 'good', 'good']);
  });
});
