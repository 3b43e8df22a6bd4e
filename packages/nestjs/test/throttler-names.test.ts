// @nestjs/throttler's option and decorator names fail at once, naming Floodgate's: a migration that only swapped imports cannot run with them silently.
import { MemoryStore } from '@floodgate/core';
import { FloodgateModule, FloodgateService, RateLimit, SkipThrottle, Throttle } from '../src';

const unknown = (option: string, meant: string) => ({ code: 'FG_UNKNOWN_OPTION', option, message: expect.stringContaining(meant) });

it.each([
  ['ttl', { ttl: 60_000, limit: 10 }, unknown('ttl', 'did you mean it?'), '`windowMs`'],
  ['throttlers', { throttlers: [{ ttl: 60_000, limit: 10 }] }, unknown('throttlers', 'did you mean it?'), '`limits: [{ name, limit, windowMs }]`'],
  ['storage', { storage: {} }, unknown('storage', 'did you mean it?'), '`store`'],
  ['getTracker', { getTracker: () => 'x' }, unknown('getTracker', 'did you mean it?'), '`key`'],
  ['skipIf', { skipIf: () => true }, unknown('skipIf', 'did you mean it?'), '`skip`'],
  ['ttl inside limits', { limits: [{ name: 'short', limit: 3, ttl: 1000 }] }, unknown('ttl', 'limits[0]'), '`windowMs`'],
])('FloodgateModule.forRoot refuses @nestjs/throttler\'s %s, naming ours', (_name, options, error, ours) => {
  expect(() => FloodgateModule.forRoot(options as never)).toThrow(expect.objectContaining(error));
  expect(() => FloodgateModule.forRoot(options as never)).toThrow(ours);
});

it("refuses forRoot([{ ttl, limit }]), @nestjs/throttler's list of throttlers, saying what Floodgate takes", () => {
  expect(() => FloodgateModule.forRoot([{ ttl: 60_000, limit: 10 }] as never)).toThrow(expect.objectContaining({ code: 'FG_INVALID_OPTION', message: expect.stringContaining('{ limits: [{ name, limit, windowMs }] }') }));
});

it('refuses the same names from a forRootAsync factory, when the app builds the module', () => {
  expect(() => new FloodgateService({ ttl: 1000 } as never)).toThrow(expect.objectContaining(unknown('ttl', 'FloodgateModule options')));
});

it("refuses @RateLimit({ ttl }) and throttler-style named entries at class definition", () => {
  expect(() => RateLimit({ ttl: 1000, limit: 3 } as never)).toThrow(expect.objectContaining(unknown('ttl', '@RateLimit()')));
  expect(() => RateLimit({ default: { limit: 3, ttl: 60_000 } } as never)).toThrow(
    expect.objectContaining(unknown('default', "`limits: [{ name: 'default', limit, windowMs }]`; did you mean `limits`?")),
  );
});

it('answers @Throttle() and @SkipThrottle() with ours', () => {
  expect(() => Throttle({ default: { limit: 3, ttl: 60_000 } })).toThrow(expect.objectContaining({ code: 'FG_UNKNOWN_OPTION', message: expect.stringContaining('did you mean @RateLimit() from @floodgate/nestjs?') }));
  expect(() => SkipThrottle()).toThrow(expect.objectContaining({ code: 'FG_UNKNOWN_OPTION', message: expect.stringContaining('did you mean @SkipRateLimit() from @floodgate/nestjs?') }));
});

it("leaves every other name to core's one check: a typo still gets core's did-you-mean, and Floodgate's own nested options pass", () => {
  expect(() => new FloodgateService({ limt: 3 } as never)).toThrow(expect.objectContaining({ code: 'FG_UNKNOWN_OPTION', option: 'limt', message: expect.stringContaining('did you mean `limit`?') }));
  expect(() => new FloodgateService({ store: new MemoryStore(), keyCache: { ttlMs: 1000 }, unmatched: false })).not.toThrow();
  expect(() => new FloodgateService({ unmatched: 'yes' } as never)).toThrow(expect.objectContaining({ code: 'FG_INVALID_OPTION', option: 'unmatched' }));
});
