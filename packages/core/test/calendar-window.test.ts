// Calendar windows' periods (the boundaries sent to the script and read by the twin) at instants whose answers are known, and the `window` option's errors.
import { createIdentify, createLimiter, FloodgateError, MAX_TIME_ZONE_LENGTH, type ResolvedKey } from '../src';
import { resolveHttpOptions } from '../src/internal';
import { resolveCalendarWindow } from '../src/calendar/calendar-window';
import { instantOf } from '../src/calendar/zoned-time';

const utc = (iso: string) => Date.parse(iso);
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** The period holding `at`: [start, end] as ISO strings. */
function period(window: object, at: string): [string, string] {
  const b = resolveCalendarWindow('window', window).around(utc(at)).boundaries;
  return [new Date(b[1]).toISOString(), new Date(b[2]).toISOString()];
}

describe('calendar periods', () => {
  it('a month in America/New_York across the March change starts at local midnight and lasts 31 days less an hour', () => {
    const w = { every: 'month', timeZone: 'America/New_York' };
    expect(period(w, '2026-03-08T07:30:00Z')).toEqual(['2026-03-01T05:00:00.000Z', '2026-04-01T04:00:00.000Z']);
    const b = resolveCalendarWindow('window', w).around(utc('2026-03-20T00:00:00Z')).boundaries;
    expect(b[2] - b[1]).toBe(31 * DAY - HOUR);
    // The previous and the next period, sent with it so that the store's clock can be a period off.
    expect(b.map((t) => new Date(t).toISOString())).toEqual([
      '2026-02-01T05:00:00.000Z',
      '2026-03-01T05:00:00.000Z',
      '2026-04-01T04:00:00.000Z',
      '2026-05-01T04:00:00.000Z',
    ]);
  });

  it('a month in America/New_York across the November change lasts 30 days and an hour', () => {
    const w = { every: 'month', timeZone: 'America/New_York' };
    expect(period(w, '2026-11-01T06:30:00Z')).toEqual(['2026-11-01T04:00:00.000Z', '2026-12-01T05:00:00.000Z']);
    // One ms before local midnight on 1 November (EDT) is still October.
    expect(period(w, '2026-11-01T03:59:59.999Z')).toEqual(['2026-10-01T04:00:00.000Z', '2026-11-01T04:00:00.000Z']);
  });

  it('Asia/Kolkata (+05:30, no daylight saving): February of a leap year ends at 18:30 UTC on the 29th', () => {
    const w = { every: 'month', timeZone: 'Asia/Kolkata' };
    expect(period(w, '2028-02-29T18:29:59.999Z')).toEqual(['2028-01-31T18:30:00.000Z', '2028-02-29T18:30:00.000Z']);
    expect(period(w, '2028-02-29T18:30:00.000Z')).toEqual(['2028-02-29T18:30:00.000Z', '2028-03-31T18:30:00.000Z']);
  });

  it('an anchor on the 31st starts on the last day of shorter months (29 February in a leap year, 28 in others)', () => {
    const w = { every: 'month', timeZone: 'UTC', anchor: '2026-01-31T09:00' };
    expect(period(w, '2028-02-15T00:00:00Z')).toEqual(['2028-01-31T09:00:00.000Z', '2028-02-29T09:00:00.000Z']);
    expect(period(w, '2028-03-01T00:00:00Z')).toEqual(['2028-02-29T09:00:00.000Z', '2028-03-31T09:00:00.000Z']);
    expect(period(w, '2027-03-01T00:00:00Z')).toEqual(['2027-02-28T09:00:00.000Z', '2027-03-31T09:00:00.000Z']);
  });

  it('a billing date: the 17th at 09:00 in the customer zone, across a daylight-saving change', () => {
    const w = { every: 'month', timeZone: 'America/New_York', anchor: '2025-11-17T09:00' };
    // 09:00 EST on 17 February is 14:00 UTC; 09:00 EDT on 17 March is 13:00 UTC.
    expect(period(w, '2026-03-17T13:59:00Z')).toEqual(['2026-03-17T13:00:00.000Z', '2026-04-17T13:00:00.000Z']);
    expect(period(w, '2026-03-17T12:59:59.999Z')).toEqual(['2026-02-17T14:00:00.000Z', '2026-03-17T13:00:00.000Z']);
  });

  it('an anchor given as an instant is read in the zone: only the unit\'s fields count', () => {
    const asInstant = resolveCalendarWindow('window', { every: 'month', timeZone: 'Asia/Kolkata', anchor: new Date('2026-01-17T03:30:00Z') });
    const asWall = resolveCalendarWindow('window', { every: 'month', timeZone: 'Asia/Kolkata', anchor: '2020-06-17T09:00' });
    expect(asInstant.id).toBe(asWall.id);
    expect(asInstant.id).toBe('month@Asia/Kolkata@d17 09:00:00');
  });

  it('a yearly window from 29 February starts on 28 February in common years', () => {
    const w = { every: 'year', timeZone: 'UTC', anchor: '2028-02-29' };
    expect(period(w, '2029-06-01T00:00:00Z')).toEqual(['2029-02-28T00:00:00.000Z', '2030-02-28T00:00:00.000Z']);
    expect(period(w, '2028-03-01T00:00:00Z')).toEqual(['2028-02-29T00:00:00.000Z', '2029-02-28T00:00:00.000Z']);
  });

  it('days in New York last 23 hours in March and 25 in November; weeks start on Monday', () => {
    const day = { every: 'day', timeZone: 'America/New_York' };
    const [s1, e1] = period(day, '2026-03-08T12:00:00Z');
    expect(utc(e1) - utc(s1)).toBe(23 * HOUR);
    const [s2, e2] = period(day, '2026-11-01T12:00:00Z');
    expect(utc(e2) - utc(s2)).toBe(25 * HOUR);
    // 2026-03-11 is a Wednesday: its week began on Monday 9 March, local midnight (EDT since the 8th).
    expect(period({ every: 'week', timeZone: 'America/New_York' }, '2026-03-11T12:00:00Z')).toEqual(['2026-03-09T04:00:00.000Z', '2026-03-16T04:00:00.000Z']);
  });

  it('a start the day skips moves forward by the gap; one it repeats is its first occurrence', () => {
    const zone = 'America/New_York';
    // 02:30 on 8 March 2026 does not exist in New York: 03:30 EDT.
    expect(new Date(instantOf({ year: 2026, month: 3, day: 8, hour: 2, minute: 30, second: 0 }, zone)).toISOString()).toBe('2026-03-08T07:30:00.000Z');
    // 01:30 on 1 November 2026 happens twice: the first, 01:30 EDT.
    expect(new Date(instantOf({ year: 2026, month: 11, day: 1, hour: 1, minute: 30, second: 0 }, zone)).toISOString()).toBe('2026-11-01T05:30:00.000Z');
    const daily = { every: 'day', timeZone: zone, anchor: '2026-01-01T02:30' };
    expect(period(daily, '2026-03-08T07:00:00Z')).toEqual(['2026-03-07T07:30:00.000Z', '2026-03-08T07:30:00.000Z']);
    expect(period(daily, '2026-03-08T08:00:00Z')).toEqual(['2026-03-08T07:30:00.000Z', '2026-03-09T06:30:00.000Z']);
  });
});

describe('the window option', () => {
  const errorOf = (f: () => unknown): FloodgateError => {
    try {
      f();
    } catch (error) {
      return error as FloodgateError;
    }
    throw new Error('expected a FloodgateError');
  };
  const make = (window: unknown, extra: object = {}) => () => createLimiter({ limit: 10, window: window as never, ...extra });

  it('names an unknown time zone and the one it most likely meant', () => {
    const e = errorOf(make({ every: 'month', timeZone: 'America/NewYork' }));
    expect(e.code).toBe('FG_INVALID_OPTION');
    expect(e.option).toBe('options.window.timeZone');
    expect(e.message).toContain("did you mean 'America/New_York'?");
    expect(errorOf(make({ every: 'month', timeZone: 'Kolkata' })).message).toContain("did you mean 'Asia/Kolkata'?");
    expect(errorOf(make({ every: 'month', timeZone: 'Mars/Olympus_Mons' })).message).not.toContain('did you mean');
  });

  it('refuses a time-zone name over 64 characters (a plan from account data) before any lookup or "did you mean" work', () => {
    // The suggestion starts by listing the platform's zones: not listing them is not doing the work.
    const listed = jest.spyOn(Intl, 'supportedValuesOf');
    try {
      for (const zone of ['x'.repeat(100_000), `America/${'A'.repeat(57)}`]) {
        const e = errorOf(make({ every: 'month', timeZone: zone }));
        expect({ code: e.code, option: e.option }).toEqual({ code: 'FG_INVALID_OPTION', option: 'options.window.timeZone' });
        expect(e.message).toContain(`at most ${MAX_TIME_ZONE_LENGTH} characters (this one has ${zone.length})`);
        expect(e.message.length).toBeLessThan(400); // the value is shown cut, with its length
      }
      expect(listed).not.toHaveBeenCalled();
      // At the bound, the name is looked up and a suggestion sought as before.
      const e = errorOf(make({ every: 'month', timeZone: `America/${'A'.repeat(56)}` }));
      expect(e.message).not.toContain('characters');
      expect(listed).toHaveBeenCalled();
      expect(MAX_TIME_ZONE_LENGTH).toBe(64);
    } finally {
      listed.mockRestore();
    }
  });

  it('an unknown option name of 100 KB (a plan from account data) is refused with a message of bounded size', () => {
    const e = errorOf(make({ every: 'month', ['z'.repeat(100_000)]: 1 }));
    expect(e.code).toBe('FG_UNKNOWN_OPTION');
    expect(e.message).toContain('(100000 characters)');
    expect(e.message.length).toBeLessThan(400);
  });

  it('names an unknown unit, with the unit meant', () => {
    const e = errorOf(make({ every: 'monthly' }));
    expect(e.option).toBe('options.window.every');
    expect(e.message).toContain("did you mean 'month'?");
    expect(errorOf(make({ every: 'hour' })).message).toContain('`windowMs`');
    expect(errorOf(make({ timeZone: 'UTC' })).option).toBe('options.window.every');
  });

  it('rejects unknown fields with "did you mean", bad anchors, and windows it cannot be', () => {
    const e = errorOf(make({ every: 'month', timezone: 'UTC' }));
    expect(e.code).toBe('FG_UNKNOWN_OPTION');
    expect(e.message).toContain('did you mean `timeZone`?');
    expect(errorOf(make({ every: 'month', anchor: '2026-02-30' })).option).toBe('options.window.anchor');
    expect(errorOf(make({ every: 'month', anchor: 'next tuesday' })).option).toBe('options.window.anchor');
    expect(errorOf(make(60_000)).message).toContain('`windowMs`');
    expect(errorOf(make({ every: 'month' }, { windowMs: '30d' })).option).toBe('options.windowMs');
    expect(errorOf(make({ every: 'month' }, { algorithm: 'sliding-window-counter' })).option).toBe('options.algorithm');
  });

  it('makes a fixed window whose key is the plain fixed window\'s, whatever the period', () => {
    const l = createLimiter({ limit: 10, window: { every: 'month', timeZone: 'Asia/Kolkata' } });
    expect(l.options.limits[0].algorithm).toBe('fixed-window');
    expect(l.options.limits[0].keySuffix).toBe('default.fw');
  });
});

describe('calendar windows in limits, routes and plans', () => {
  it('a top-level `window` is the default of the limits that set neither windowMs nor another algorithm', () => {
    const l = createLimiter({
      window: { every: 'month', timeZone: 'Asia/Kolkata' },
      limits: [
        { name: 'monthly', limit: 1000 },
        { name: 'minute', limit: 10, windowMs: '1m' },
        { name: 'burst', algorithm: 'token-bucket', burst: 5, refillPerSecond: 1 },
      ],
    });
    const [monthly, minute, burst] = l.options.limits;
    expect([monthly.algorithm, 'calendar' in monthly.store && monthly.store.calendar?.id]).toEqual(['fixed-window', 'month@Asia/Kolkata@d1 00:00:00']);
    expect([minute.algorithm, minute.windowMs, 'calendar' in minute.store && minute.store.calendar]).toEqual(['sliding-window-counter', 60_000, false]);
    expect(burst.algorithm).toBe('token-bucket');
    expect(() => createLimiter({ window: { every: 'day' }, algorithm: 'gcra', limits: [{ limit: 5 }] })).toThrow(/calendar `window`/);
  });

  it('a route\'s `window` replaces the app-level windowMs, and a route\'s windowMs the app-level window', () => {
    const route = resolveHttpOptions({ limit: 5, windowMs: '1m' }, { window: { every: 'day', timeZone: 'America/New_York' } });
    const [limit] = route.limiter.limits;
    expect('calendar' in limit.store && limit.store.calendar?.id).toBe('day@America/New_York@00:00:00');
    const back = resolveHttpOptions({ limit: 5, window: { every: 'day' } }, { windowMs: '1m' });
    expect(back.limiter.limits[0]).toMatchObject({ algorithm: 'sliding-window-counter', windowMs: 60_000 });
  });

  it('plans from resolveKey: a billing date is part of the plan (distinct anchors, distinct plans), a changed limit keeps the key', async () => {
    const answers: Record<string, ResolvedKey> = {
      a: { account: 'a', limits: [{ name: 'quota', limit: 3, window: { every: 'month', timeZone: 'UTC', anchor: '2026-01-17T09:00' } }] },
      b: { account: 'b', limits: [{ name: 'quota', limit: 3, window: { every: 'month', timeZone: 'UTC', anchor: '2025-06-17T09:00:00' } }] },
      c: { account: 'c', limits: [{ name: 'quota', limit: 3, window: { every: 'month', timeZone: 'UTC', anchor: '2026-01-18T09:00' } }] },
    };
    const identify = createIdentify({ resolveKey: (key) => answers[key] ?? null, logger: { warn() {}, error() {} } });
    const facts = (key: string) => ({ ip: '203.0.113.7', headers: { 'x-api-key': key }, method: 'GET', route: '/r' });
    const [a, b, c] = await Promise.all(['a', 'b', 'c'].map((k) => identify(facts(k))));
    // The 17th at 09:00 is one plan, whatever year the billing date was first set in; the 18th is another.
    expect(a.plan).toBe(b.plan);
    expect(a.plan).not.toBe(c.plan);
    expect(a.resolvedLimits![0].keySuffix).toBe(c.resolvedLimits![0].keySuffix);
  });
});
