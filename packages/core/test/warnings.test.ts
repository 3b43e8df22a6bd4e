// The warnings' own rules: names checked where they enter, windowMs that reads as seconds, written once per logger, off by name.
import { createIdentify, createLimiter, FloodgateError, WARNING_CODES } from '../src';
import { looksLikeSeconds, resolveWarnings, warnOnce } from '../src/base/warnings';

function recorder() {
  const lines: string[] = [];
  return { lines, logger: { warn: (m: string) => void lines.push(m), error: (m: string) => void lines.push(m) } };
}

describe('warnings', () => {
  it('an unknown name or a non-boolean in `warnings` is an error naming the valid ones, on createLimiter and createIdentify alike', () => {
    for (const build of [(w: unknown) => createLimiter({ limit: 5, warnings: w as never }), (w: unknown) => createIdentify({ warnings: w as never })]) {
      expect(() => build({ FG_NOPE: false })).toThrow(FloodgateError);
      expect(() => build({ FG_NOPE: false })).toThrow(/warnings\.FG_NOPE.*one of FG_IP_MISSING, .*FG_WINDOW_IN_SECONDS/);
      expect(() => build({ FG_TRUST_PROXY_ALL: 'no' })).toThrow(/warnings\.FG_TRUST_PROXY_ALL.*true or false/);
      expect(() => build([])).toThrow(/`warnings`/);
    }
    expect([...resolveWarnings({ FG_COUNTED_TWICE: false })]).toEqual(WARNING_CODES.filter((c) => c !== 'FG_COUNTED_TWICE'));
  });

  it.each([
    [60, true], [1, true], [900, true], [999, true], [1800, true], [3600, true], [7200, true], [86_400, true],
    [1000, false], [1500, false], [5000, false], [60_000, false], [3_600_000, false], [172_800, false], ['60s', false], ['60', false], [0, false], [-60, false],
  ])('windowMs %p reads as seconds: %p', (value, expected) => {
    expect(looksLikeSeconds(value)).toBe(expected);
  });

  it('createLimiter({ windowMs: 60 }) writes FG_WINDOW_IN_SECONDS once per logger and value; a second limiter on the same logger writes nothing more', () => {
    const rec = recorder();
    createLimiter({ limit: 5, windowMs: 60, logger: rec.logger });
    createLimiter({ limit: 5, windowMs: 60, logger: rec.logger });
    expect(rec.lines).toEqual([
      "[floodgate] FG_WINDOW_IN_SECONDS: windowMs: 60 is 60 milliseconds. If you meant 60 seconds, write windowMs: '60s' (or 60000); if you meant milliseconds, write '60ms' (docs/errors.md#fg-window-in-seconds). Written once; switch it off with warnings: { FG_WINDOW_IN_SECONDS: false }.",
    ]);
    createLimiter({ limits: [{ name: 'a', limit: 1, windowMs: 3600 }], logger: rec.logger });
    expect(rec.lines).toHaveLength(2);
    expect(rec.lines[1]).toContain('windowMs: 3600 is 3600 milliseconds');
  });

  it("switched off by name, or given as a duration string, it writes nothing", () => {
    const rec = recorder();
    createLimiter({ limit: 5, windowMs: 60, logger: rec.logger, warnings: { FG_WINDOW_IN_SECONDS: false } });
    createLimiter({ limit: 5, windowMs: '60ms', logger: rec.logger });
    createLimiter({ limit: 5, windowMs: '60s', logger: rec.logger });
    expect(rec.lines).toEqual([]);
  });

  it('warnOnce survives a logger that throws, and writes nothing for a code switched off', () => {
    const on = resolveWarnings({ FG_COUNTED_TWICE: false });
    const throwing = { warn: () => { throw new Error('broken'); } };
    expect(warnOnce(throwing, on, 'FG_TRUST_PROXY_ALL', 'x')).toBe(true);
    expect(warnOnce(throwing, on, 'FG_TRUST_PROXY_ALL', 'x')).toBe(false);
    const rec = recorder();
    expect(warnOnce(rec.logger, on, 'FG_COUNTED_TWICE', 'x')).toBe(false);
    expect(rec.lines).toEqual([]);
  });

  it('identify checks the trust-proxy facts an adapter hands over: each warning once, none for "some" or when unknown', () => {
    const rec = recorder();
    const identify = createIdentify({ logger: rec.logger });
    const facts = { ip: '127.0.0.1', method: 'GET', route: '/r' };
    identify({ ...facts, headers: { 'x-forwarded-for': '203.0.113.1' } });
    identify({ ...facts, headers: { 'x-forwarded-for': '203.0.113.1' }, trustProxy: 'some' });
    expect(rec.lines).toEqual([]);
    identify({ ...facts, headers: { forwarded: 'for=203.0.113.1' }, trustProxy: 'none' });
    identify({ ...facts, headers: { 'x-real-ip': '203.0.113.1' }, trustProxy: 'none' });
    identify({ ...facts, headers: {}, trustProxy: 'all' });
    identify({ ...facts, headers: {}, trustProxy: 'all' });
    expect(rec.lines.map((l) => l.split(':')[0])).toEqual(['[floodgate] FG_PROXY_HEADER_UNTRUSTED', '[floodgate] FG_TRUST_PROXY_ALL']);
    expect(rec.lines[0]).toContain('a request carried forwarded but the framework trusts no proxy');
  });
});
