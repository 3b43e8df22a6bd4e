// Identity without lookups: API key first (hashed), IP normalisation, the missing-IP fallback, option validation.
import { createHash } from 'node:crypto';
import { FloodgateError } from '../src/base/errors';
import { createIdentify, UNKNOWN_IP_SUBJECT, type Identity, type IdentityOptions, type RequestFacts } from '../src/identity';

function facts(ip: string | undefined, headers: RequestFacts['headers'] = {}): RequestFacts {
  return { ip, headers, method: 'GET', route: '/r' };
}

/** identify() without resolveKey must answer synchronously. */
function sync(identify: ReturnType<typeof createIdentify>, f: RequestFacts): Identity {
  const out = identify(f);
  if (out instanceof Promise) throw new Error('expected a synchronous identity');
  return out;
}

function recordingLogger() {
  const lines: string[] = [];
  return { lines, logger: { warn: (message: string) => void lines.push(message), error: (message: string) => void lines.push(message) } };
}

const digest = (key: string) => `key:${createHash('sha256').update(key).digest('base64url')}`;

describe('an unverified key never buys its own budget', () => {
  it('keys a request with a key but no resolveKey on its client IP by default, whatever key it sends', () => {
    const identify = createIdentify();
    const subjects = new Set<string>();
    for (let i = 0; i < 40; i++) {
      const id = sync(identify, facts('10.0.0.1', i % 2 ? { 'x-api-key': `invented-${i}` } : { authorization: `Bearer invented-${i}` }));
      expect(id).toEqual({ subject: 'ip:10.0.0.1', kind: 'ip', keyStatus: 'unverified' });
      subjects.add(id.subject);
    }
    expect(subjects.size).toBe(1);
  });

  it("keys each key on its own bucket only when the app says the keys are verified upstream (unverifiedKeys: { trust })", () => {
    const trusting = createIdentify({ unverifiedKeys: { trust: 'x-api-key' } });
    expect(sync(trusting, facts('10.0.0.1', { 'x-api-key': 'k1' }))).toEqual({ subject: digest('k1'), kind: 'api-key', keyStatus: 'unverified' });
    expect(() => createIdentify({ unverifiedKeys: { trust: 'x-api-key' }, resolveKey: () => null })).toThrow(/unverifiedKeys.*only without `resolveKey`/);
    expect(() => createIdentify({ unverifiedKeys: 'yes' as never })).toThrow(/`unverifiedKeys`: got "yes"; expected 'ip', or \{ trust: '<header>' \}/);
  });

  it('trusts only the named header: an invented Bearer beside the verified x-api-key never buys a bucket (issue 40, row 5)', () => {
    const identify = createIdentify({ unverifiedKeys: { trust: 'x-api-key' } });
    const subjects = new Set<string>();
    for (let i = 0; i < 6; i++) {
      // authorization comes first in the default apiKeyHeaders: before the fix, the first header present won.
      subjects.add(sync(identify, facts('10.0.0.1', { authorization: `Bearer invented-${i}`, 'x-api-key': 'verified-by-gateway' })).subject);
    }
    expect([...subjects]).toEqual([digest('verified-by-gateway')]);
    // A key only in an untrusted header names nobody: the IP's bucket.
    expect(sync(identify, facts('10.0.0.1', { authorization: 'Bearer invented' }))).toEqual({ subject: 'ip:10.0.0.1', kind: 'ip', keyStatus: 'unverified' });
    // The header is named in any case; Bearer parsing applies when it is authorization.
    const bearer = createIdentify({ unverifiedKeys: { trust: 'Authorization' } });
    expect(sync(bearer, facts('10.0.0.1', { authorization: 'Bearer b1', 'x-api-key': 'invented' })).subject).toBe(digest('b1'));
    expect(sync(bearer, facts('10.0.0.1', { 'x-api-key': 'invented' })).subject).toBe('ip:10.0.0.1');
  });

  it("refuses the ambiguous bare 'trust' with several key headers at construction, naming the fix; accepts it with one", () => {
    let error: unknown;
    try {
      createIdentify({ unverifiedKeys: 'trust' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(FloodgateError);
    expect(error).toMatchObject({ code: 'FG_INVALID_OPTION', option: 'unverifiedKeys', message: expect.stringContaining("{ trust: 'x-api-key' }") });
    expect(() => createIdentify({ unverifiedKeys: 'trust', apiKeyHeaders: false })).toThrow(/apiKeyHeaders is false/);
    expect(() => createIdentify({ unverifiedKeys: { trust: 'x-token' } })).toThrow(/`unverifiedKeys.trust`: got "x-token"; expected one of apiKeyHeaders \(authorization, x-api-key\)/);
    expect(() => createIdentify({ unverifiedKeys: { trusts: 'x-api-key' } as never })).toThrow(/did you mean `trust`/);
    // One key header: 'trust' is unambiguous, and keeps working as before.
    const single = createIdentify({ unverifiedKeys: 'trust', apiKeyHeaders: ['x-api-key'] });
    expect(sync(single, facts('10.0.0.1', { 'x-api-key': 'k1', authorization: 'Bearer other' })).subject).toBe(digest('k1'));
  });
});

describe('API key first (keys verified upstream)', () => {
  const identify = createIdentify({ unverifiedKeys: { trust: 'authorization' } });
  const byApiKey = createIdentify({ unverifiedKeys: { trust: 'x-api-key' } });

  it('reads Authorization: Bearer, any case of the scheme, and keys on the digest, never the raw key', () => {
    const a = sync(identify, facts('10.0.0.1', { authorization: 'Bearer sk_live_123' }));
    const b = sync(identify, facts('10.0.0.2', { authorization: 'bearer   sk_live_123 ' }));
    expect(a).toEqual({ subject: digest('sk_live_123'), kind: 'api-key', keyStatus: 'unverified' });
    expect(b.subject).toBe(a.subject);
    expect(a.subject).not.toContain('sk_live_123');
  });

  it('reads x-api-key trimmed, and ignores other Authorization schemes', () => {
    expect(sync(byApiKey, facts('10.0.0.1', { 'x-api-key': ' k1 ' })).subject).toBe(digest('k1'));
    expect(sync(identify, facts('10.0.0.1', { authorization: 'Basic dXNlcjpwYXNz' }))).toEqual({ subject: 'ip:10.0.0.1', kind: 'ip' });
  });

  it('takes a configured header name in any case, and ignores blank values', () => {
    const identifyCustom = createIdentify({ apiKeyHeaders: ['X-Client-Token'], unverifiedKeys: 'trust' });
    expect(sync(identifyCustom, facts('10.0.0.1', { 'x-client-token': 't' })).subject).toBe(digest('t'));
    expect(sync(identifyCustom, facts('10.0.0.1', { 'x-api-key': 't' })).subject).toBe('ip:10.0.0.1');
    expect(sync(identify, facts('10.0.0.1', { 'x-api-key': '   ', authorization: 'Bearer ' })).subject).toBe('ip:10.0.0.1');
  });

  it('keys on IP only with apiKeyHeaders: false', () => {
    expect(sync(createIdentify({ apiKeyHeaders: false }), facts('10.0.0.1', { 'x-api-key': 'k' })).subject).toBe('ip:10.0.0.1');
  });

  it('takes the first value of a repeated header', () => {
    expect(sync(byApiKey, facts('10.0.0.1', { 'x-api-key': ['a', 'b'] })).subject).toBe(digest('a'));
  });
});

describe('IP normalisation', () => {
  const identify = createIdentify();
  const subject = (ip: string) => sync(identify, facts(ip)).subject;

  it('counts IPv4-mapped IPv6 as the IPv4 address', () => {
    expect(subject('::ffff:10.0.0.1')).toBe('ip:10.0.0.1');
    expect(subject('::FFFF:10.0.0.1')).toBe('ip:10.0.0.1');
    expect(subject('::ffff:a00:1')).toBe('ip:10.0.0.1');
    expect(subject('0:0:0:0:0:ffff:0a00:0001')).toBe('ip:10.0.0.1');
    expect(subject('10.0.0.1')).toBe('ip:10.0.0.1');
  });

  it('gives every textual form of one IPv6 address one key', () => {
    const forms = [
      '2001:db8:85a3::8a2e:370:7334',
      '2001:0db8:85a3:0000:0000:8a2e:0370:7334',
      '2001:DB8:85A3::8A2E:370:7334',
      '2001:db8:85a3:0:0:8a2e:370:7334',
      '2001:db8:85a3::8a2e:370:7334%eth0',
      '2001:db8:85a3::8a2e:370:7334%25',
      '[2001:db8:85a3::8a2e:370:7334]',
      '[2001:db8:85a3::8a2e:370:7334]:443',
      ' 2001:db8:85a3::8a2e:370:7334 ',
    ];
    const keys = new Set(forms.map(subject));
    expect([...keys]).toEqual(['ip6:2001:db8:85a3::/64']);
  });

  it('keys IPv6 on its /64 by default: one /64 is one bucket, two /64s are two', () => {
    expect(subject('2001:db8:1:2::1')).toBe(subject('2001:db8:1:2:ffff:ffff:ffff:ffff'));
    expect(subject('2001:db8:1:2::1')).not.toBe(subject('2001:db8:1:3::1'));
  });

  it('honours ipv6Subnet, including prefixes that cut a 16-bit group', () => {
    const s = (bits: number, ip: string) => sync(createIdentify({ ipv6Subnet: bits }), facts(ip)).subject;
    expect(s(48, '2001:db8:1:2::1')).toBe('ip6:2001:db8:1::/48');
    expect(s(56, '2001:db8:1:2ff::1')).toBe('ip6:2001:db8:1:200::/56');
    expect(s(128, '2001:db8::1')).not.toBe(s(128, '2001:db8::2'));
    expect(s(1, 'ffff::1')).toBe('ip6:8000::/1');
  });

  it('gives the legacy IPv4 spellings of an address that address', () => {
    expect(subject('127.0.0.1')).toBe('ip:127.0.0.1');
    expect(subject('0x7f.0.0.1')).toBe('ip:127.0.0.1');
    expect(subject('2130706433')).toBe('ip:127.0.0.1');
    expect(subject('127.0.0.1:8080')).toBe('ip:127.0.0.1');
  });

  it('sends missing and malformed IPs to one shared bucket and warns once per problem', () => {
    const { lines, logger } = recordingLogger();
    const identifyLogged = createIdentify({ logger });
    const odd = [undefined, '', '   ', 'not-an-ip', '1.2.3.4.5', '256.1.1.1', '::ffff:999.1.1.1', 'a'.repeat(10_000), '[::1', '::1]:x', '1.2.3.4, 5.6.7.8', '{}:'];
    for (const ip of odd) expect(sync(identifyLogged, facts(ip))).toEqual({ subject: UNKNOWN_IP_SUBJECT, kind: 'unknown' });
    for (const ip of odd) sync(identifyLogged, facts(ip));
    expect(lines).toHaveLength(2);
    expect(lines[0]).toContain('FG_IP_MISSING');
    expect(lines[1]).toContain('FG_IP_MALFORMED');
    // The log line shows at most a short sample of a hostile value.
    expect(Math.max(...lines.map((l) => l.length))).toBeLessThan(400);
  });

  it('lets single warnings be switched off by name', () => {
    const { lines, logger } = recordingLogger();
    const quiet = createIdentify({ logger, warnings: { FG_IP_MISSING: false } });
    sync(quiet, facts(undefined));
    sync(quiet, facts('x'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('FG_IP_MALFORMED');
    const all = createIdentify({ logger, warnings: { FG_IP_MISSING: false, FG_IP_MALFORMED: false } });
    sync(all, facts('y'));
    expect(lines).toHaveLength(1);
  });

  it('survives facts that are not what the types say', () => {
    const identifyQuiet = createIdentify({ warnings: { FG_IP_MISSING: false, FG_IP_MALFORMED: false } });
    const weird = [
      { ip: 42, headers: null },
      { ip: {}, headers: { authorization: 7, 'x-api-key': { a: 1 } } },
      { ip: ['1.2.3.4'], headers: undefined },
    ] as unknown as RequestFacts[];
    for (const f of weird) expect(sync(identifyQuiet, f).subject).toBe(UNKNOWN_IP_SUBJECT);
  });
});

describe('option validation', () => {
  const bad: [IdentityOptions, string][] = [
    [{ ipv6Subnet: 0 }, 'ipv6Subnet'],
    [{ ipv6Subnet: 129 }, 'ipv6Subnet'],
    [{ ipv6Subnet: 64.5 }, 'ipv6Subnet'],
    [{ ipv6Subnet: '64' as unknown as number }, 'ipv6Subnet'],
    [{ apiKeyHeaders: 'x-api-key' as unknown as string[] }, 'apiKeyHeaders'],
    [{ apiKeyHeaders: ['x api key'] }, 'apiKeyHeaders[0]'],
    [{ apiKeyHeaders: [''] }, 'apiKeyHeaders[0]'],
    [{ maxApiKeyLength: 0 }, 'maxApiKeyLength'],
    [{ unknownKey: 'reject' }, 'unknownKey'],
    [{ resolveKey: async () => null, unknownKey: 'allow' as 'ip' }, 'unknownKey'],
    [{ resolveKey: 'db' as unknown as () => null }, 'resolveKey'],
    [{ resolveKey: async () => null, keyCache: { ttlMs: 0 } }, 'keyCache.ttlMs'],
    [{ resolveKey: async () => null, keyCache: { unknownTtlMs: 'soon' as '1s' } }, 'keyCache.unknownTtlMs'],
    [{ resolveKey: async () => null, keyCache: { max: 0 } }, 'keyCache.max'],
    [{ resolveKey: async () => null, resolveTimeoutMs: -1 }, 'resolveTimeoutMs'],
    [{ logger: console.warn as unknown as Console }, 'logger'],
    [{ warnings: { FG_NOPE: false } as unknown as IdentityOptions['warnings'] }, 'warnings.FG_NOPE'],
  ];
  it.each(bad)('throws FG_INVALID_OPTION at construction for %j', (options, option) => {
    let error: unknown;
    try {
      createIdentify(options);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(FloodgateError);
    expect(error).toMatchObject({ code: 'FG_INVALID_OPTION', option });
  });

  it('does not mutate the caller options', () => {
    const options = Object.freeze({ apiKeyHeaders: Object.freeze(['X-Api-Key']) as string[], ipv6Subnet: 56 });
    expect(() => createIdentify(options)).not.toThrow();
    expect(options.apiKeyHeaders).toEqual(['X-Api-Key']);
  });
});
