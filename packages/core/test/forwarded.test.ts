// forwardedClient: the one X-Forwarded-For rule Hono, @floodgate/socket and @floodgate/graphql share, over hostile headers too.
import fc from 'fast-check';
import { createAllowList, forwardedClient } from '../src/http';

const trusted = createAllowList(['10.0.0.0/8'], 'trustProxy')!;

describe('forwardedClient', () => {
  it('reads no header from a peer that is not a trusted proxy', () => {
    expect(forwardedClient('203.0.113.9', '198.51.100.1', trusted)).toBe('203.0.113.9');
    expect(forwardedClient(undefined, '198.51.100.1', trusted)).toBeUndefined();
  });

  it('takes the right-most hop that is not a trusted proxy; the left-most when all are', () => {
    expect(forwardedClient('10.0.0.1', '1.1.1.1, 198.51.100.7, 10.2.3.4', trusted)).toBe('198.51.100.7');
    expect(forwardedClient('10.0.0.1', ['1.1.1.1', '198.51.100.7'], trusted)).toBe('198.51.100.7');
    expect(forwardedClient('10.0.0.1', '10.9.9.9, 10.2.3.4', trusted)).toBe('10.9.9.9');
    expect(forwardedClient('10.0.0.1', '', trusted)).toBe('10.0.0.1');
    expect(forwardedClient('10.0.0.1', null, trusted)).toBe('10.0.0.1');
  });

  it('a client cannot name a hop to the right of the last untrusted one (generated headers)', () => {
    const hop = fc.oneof(fc.constantFrom('10.1.1.1', '10.200.0.3', '198.51.100.7', '203.0.113.4', ' ', '', 'junk', '::1'), fc.ipV4(), fc.string({ maxLength: 12 }));
    fc.assert(
      fc.property(fc.array(hop, { maxLength: 30 }), (hops) => {
        const header = hops.join(',');
        const got = forwardedClient('10.0.0.1', header, trusted);
        const parts = header.split(',').map((h) => h.trim());
        const untrusted = parts.map((h, i) => [h, i] as const).filter(([h]) => !trusted(h));
        const want = header === '' ? '10.0.0.1' : untrusted.length > 0 ? untrusted[untrusted.length - 1][0] : parts[0];
        expect(got).toBe(want);
      }),
      { numRuns: 500 },
    );
  });
});
