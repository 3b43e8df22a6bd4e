// Calendar windows: a limit's `window` option (a day, week, month or year in a named time zone, or from a per-subject anchor), parsed once into its periods.
import type { CalendarPeriods, CalendarSpan } from '../algorithms/types';
import { invalidOption } from '../base/errors';
import { checkOptionNames, distance, optionNames } from '../base/validate';
import { knownZone, dateOfDay, dayNumber, daysInMonth, instantOf, wallTimeAt, weekdayOf, type WallTime } from './zoned-time';

/** The calendar units a window can follow. */
export const CALENDAR_UNITS = ['day', 'week', 'month', 'year'] as const;
export type CalendarUnit = (typeof CALENDAR_UNITS)[number];

/**
 * A fixed window that follows the calendar: it resets at the start of each day, week, month or year
 * in `timeZone`, or on the anniversary of `anchor` (a billing date). Decided by the store's clock
 * (Redis `TIME`); the period boundaries come from the platform's time-zone database (Intl), with
 * daylight-saving changes and month lengths handled. See docs/quotas.md.
 */
export interface CalendarWindowOptions {
  /** The period: 'day', 'week' (from Monday, or from the anchor's weekday), 'month' or 'year'. Required. */
  every: CalendarUnit;
  /**
   * The IANA time zone whose calendar the periods follow, e.g. 'America/New_York', 'Asia/Kolkata'.
   * Default 'UTC'.
   */
  timeZone?: string;
  /**
   * When periods start. A wall time in `timeZone` ('2026-01-17T09:00', '2026-01-17'), or an instant
   * (a `Date`, epoch ms, or a string with `Z` or an offset) read in `timeZone`. Only the fields the
   * unit repeats on count: its time of day ('day'), weekday and time ('week'), day of the month and
   * time ('month': the 31st starts on the last day of shorter months), or month, day and time ('year':
   * 29 February starts on 28 February in other years). Default: midnight on the 1st, on Monday, on 1 January.
   */
  anchor?: string | number | Date;
}

export const CALENDAR_WINDOW_OPTION_NAMES = optionNames<CalendarWindowOptions>()(['every', 'timeZone', 'anchor']);

/** Words people write for a unit, and the unit they mean. */
const UNIT_ALIASES: Readonly<Record<string, CalendarUnit>> = {
  days: 'day',
  daily: 'day',
  weeks: 'week',
  weekly: 'week',
  months: 'month',
  monthly: 'month',
  years: 'year',
  yearly: 'year',
  annual: 'year',
  annually: 'year',
};

/** The longest period of each unit, in ms: a day across a daylight-saving change lasts 25 hours. */
const LONGEST_MS: Readonly<Record<CalendarUnit, number>> = {
  day: 25 * 3_600_000,
  week: 7 * 86_400_000 + 3_600_000,
  month: 31 * 86_400_000 + 3_600_000,
  year: 366 * 86_400_000 + 3_600_000,
};

/** A unit's repeating start: the fields of the anchor that unit repeats on. */
interface Anchor {
  readonly month: number;
  readonly day: number;
  readonly weekday: number;
  readonly hour: number;
  readonly minute: number;
  readonly second: number;
}

const WALL = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?)?$/;
const pad = (n: number) => String(n).padStart(2, '0');

function unitOf(option: string, value: unknown): CalendarUnit {
  if (typeof value === 'string' && (CALENDAR_UNITS as readonly string[]).includes(value)) return value as CalendarUnit;
  const meant = typeof value === 'string' ? UNIT_ALIASES[value.toLowerCase()] ?? CALENDAR_UNITS.find((u) => u === value.toLowerCase()) : undefined;
  const hint = meant
    ? ` (did you mean '${meant}'?)`
    : typeof value === 'string' && /^(ms|s|sec|second|minute|min|m|h|hour|hours|minutes|seconds)$/i.test(value)
      ? ` (a window of fixed length is \`windowMs\`, e.g. '1h')`
      : '';
  return invalidOption(`${option}.every`, value, `one of ${CALENDAR_UNITS.map((u) => `'${u}'`).join(', ')}${hint}`);
}

/** The zone names the platform knows (Node 18+), for "did you mean". */
function knownZones(): readonly string[] {
  const supported = (Intl as { supportedValuesOf?: (key: string) => string[] }).supportedValuesOf;
  return supported ? [...supported('timeZone'), 'UTC'] : ['UTC'];
}

/**
 * The longest time-zone name accepted (IANA's are under 40 characters). Checked before any lookup or
 * "did you mean" work, so a name that comes from account data (a plan's `window`) costs bounded work.
 */
export const MAX_TIME_ZONE_LENGTH = 64;

/**
 * The zone a misspelt one most likely meant: same city (`Kolkata`, `new york`), or one edit away per
 * 4 letters. Called with at most MAX_TIME_ZONE_LENGTH characters; the edit distance is computed only
 * against names whose length is within the edits allowed (a longer gap cannot be that close).
 */
function suggestZone(value: string): string | undefined {
  const norm = (s: string) => s.toLowerCase().replace(/[\s-]+/g, '_');
  const want = norm(value);
  const zones = knownZones();
  const city = zones.find((z) => norm(z.slice(z.lastIndexOf('/') + 1)) === want);
  if (city) return city;
  // A city the platform lists under an older name ('Asia/Calcutta') but knows by its current one.
  const spelt = value.trim().replace(/\s+/g, '_').replace(/(^|_)([a-z])/g, (_, sep: string, c: string) => sep + c.toUpperCase());
  for (const region of new Set(zones.map((z) => z.split('/')[0]))) {
    if (region !== 'UTC' && knownZone(`${region}/${spelt}`) !== undefined) return `${region}/${spelt}`;
  }
  const allowed = Math.max(1, Math.floor(value.length / 4));
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const z of zones) {
    const name = norm(z);
    if (Math.abs(name.length - want.length) > allowed) continue;
    const d = distance(want, name);
    if (d < bestDistance) [best, bestDistance] = [z, d];
  }
  return bestDistance <= allowed ? best : undefined;
}

function zoneOf(option: string, value: unknown): string {
  if (value === undefined) return 'UTC';
  if (typeof value === 'string' && value.length > MAX_TIME_ZONE_LENGTH) {
    return invalidOption(`${option}.timeZone`, value, `an IANA time zone name of at most ${MAX_TIME_ZONE_LENGTH} characters (this one has ${value.length}), such as 'America/New_York'`);
  }
  const zone = typeof value === 'string' ? knownZone(value) : undefined;
  if (zone !== undefined) return zone;
  const meant = typeof value === 'string' ? suggestZone(value) : undefined;
  return invalidOption(
    `${option}.timeZone`,
    value,
    `an IANA time zone this platform knows, such as 'America/New_York', 'Europe/Berlin' or 'UTC'${meant ? ` (did you mean '${meant}'?)` : ''}`,
  );
}

/** The anchor's wall time in `zone`, from a wall-time string or an instant. */
function anchorWall(option: string, value: unknown, zone: string): WallTime {
  const expected = "a wall time in `timeZone` such as '2026-01-17T09:00' or '2026-01-17', or an instant (a Date, epoch ms, or an ISO string with Z or an offset)";
  if (typeof value === 'string') {
    const m = WALL.exec(value.trim());
    if (m) {
      const [year, month, day, hour, minute, second] = [1, 2, 3, 4, 5, 6].map((i) => Number(m[i] ?? 0));
      if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month) || hour > 23 || minute > 59 || second > 59) {
        invalidOption(`${option}.anchor`, value, `${expected}, naming a date and time that exist in the calendar`);
      }
      return { year, month, day, hour, minute, second };
    }
    const ms = /\d{4}-\d{2}-\d{2}T.*(Z|[+-]\d{2}:?\d{2})$/i.test(value.trim()) ? Date.parse(value) : NaN;
    if (!Number.isFinite(ms)) invalidOption(`${option}.anchor`, value, expected);
    return wallTimeAt(ms, zone);
  }
  const ms = value instanceof Date ? value.getTime() : value;
  if (typeof ms !== 'number' || !Number.isSafeInteger(ms)) invalidOption(`${option}.anchor`, value, expected);
  return wallTimeAt(ms, zone);
}

/** The periods of one calendar window: boundaries computed by instant, cached for the period now running. */
class ResolvedCalendarWindow implements CalendarPeriods {
  readonly id: string;
  readonly longestMs: number;
  private cached: CalendarSpan | undefined;

  constructor(
    readonly every: CalendarUnit,
    readonly timeZone: string,
    private readonly anchor: Anchor,
  ) {
    const a = anchor;
    const time = `${pad(a.hour)}:${pad(a.minute)}:${pad(a.second)}`;
    const at = every === 'day' ? time : every === 'week' ? `wd${a.weekday} ${time}` : every === 'month' ? `d${a.day} ${time}` : `${pad(a.month)}-${pad(a.day)} ${time}`;
    this.id = `${every}@${timeZone}@${at}`;
    this.longestMs = LONGEST_MS[every];
  }

  /**
   * The index of the period whose calendar date holds this wall date (before the anchor time is
   * weighed): a day number ('day', 'week': the anchor weekday on or before it), a month count, a year.
   */
  private indexOf(w: WallTime): number {
    switch (this.every) {
      case 'day':
        return dayNumber(w.year, w.month, w.day);
      case 'week': {
        const n = dayNumber(w.year, w.month, w.day);
        return n - ((weekdayOf(n) - this.anchor.weekday + 7) % 7);
      }
      case 'month':
        return w.year * 12 + (w.month - 1);
      case 'year':
        return w.year;
    }
  }

  private get step(): number {
    return this.every === 'week' ? 7 : 1;
  }

  /** The instant period `index` starts: the anchor's wall time on its date, the day clamped to the month's length. */
  private startOf(index: number): number {
    const { hour, minute, second } = this.anchor;
    let date: { year: number; month: number; day: number };
    if (this.every === 'day' || this.every === 'week') date = dateOfDay(index);
    else {
      const year = this.every === 'month' ? Math.floor(index / 12) : index;
      const month = this.every === 'month' ? index - year * 12 + 1 : this.anchor.month;
      date = { year, month, day: Math.min(this.anchor.day, daysInMonth(year, month)) };
    }
    return instantOf({ ...date, hour, minute, second }, this.timeZone);
  }

  around(now: number): CalendarSpan {
    const c = this.cached;
    if (c !== undefined && c.boundaries[1] <= now && now < c.boundaries[2]) return c;
    const step = this.step;
    let n = this.indexOf(wallTimeAt(now, this.timeZone));
    // The anchor's time may fall later on today's date (or month's, year's): then the period running began one step earlier.
    while (this.startOf(n) > now) n -= step;
    while (this.startOf(n + step) <= now) n += step;
    const boundaries = [this.startOf(n - step), this.startOf(n), this.startOf(n + step), this.startOf(n + 2 * step)];
    const span: CalendarSpan = { boundaries, text: boundaries.join(',') };
    this.cached = span;
    return span;
  }

  lengthEnding(end: number): number {
    const b = this.cached?.boundaries;
    if (b !== undefined) {
      for (let i = 1; i < b.length; i++) if (b[i] === end) return b[i] - b[i - 1];
    }
    const span = this.around(end - 1);
    return span.boundaries[2] - span.boundaries[1];
  }
}

/** Parses a limit's `window` option (its name in errors: `option`). Unknown fields, units and zones are errors with "did you mean". */
export function resolveCalendarWindow(option: string, value: unknown): ResolvedCalendarWindow {
  if (!value || typeof value !== 'object' || Array.isArray(value) || value instanceof Date) {
    invalidOption(
      option,
      value,
      "a calendar window such as { every: 'month', timeZone: 'America/New_York' } (a window of fixed length is `windowMs`, e.g. '1h' or 60000)",
    );
  }
  checkOptionNames(option, value, CALENDAR_WINDOW_OPTION_NAMES);
  const raw = value as CalendarWindowOptions;
  if (raw.every === undefined) invalidOption(`${option}.every`, undefined, `one of ${CALENDAR_UNITS.map((u) => `'${u}'`).join(', ')}`);
  const every = unitOf(option, raw.every);
  const timeZone = zoneOf(option, raw.timeZone);
  const w: WallTime = raw.anchor === undefined ? { year: 2024, month: 1, day: 1, hour: 0, minute: 0, second: 0 } : anchorWall(option, raw.anchor, timeZone);
  // Without an anchor: 1 January 2024, a Monday (weeks start on Monday, as in ISO 8601).
  const weekday = weekdayOf(dayNumber(w.year, w.month, w.day));
  return new ResolvedCalendarWindow(every, timeZone, { month: w.month, day: w.day, weekday, hour: w.hour, minute: w.minute, second: w.second });
}

/**
 * A calendar window again from what JSON keeps of one (`every`, `timeZone` and its anchor's own
 * fields): how a Durable Object rebuilds the windows of the requests it is sent. Undefined when the
 * fields are not those of a window this module made (the object then refuses the request).
 */
export function calendarWindowFromJson(value: unknown): ResolvedCalendarWindow | undefined {
  if (!value || typeof value !== 'object') return undefined;
  const { every, timeZone, anchor } = value as { every?: unknown; timeZone?: unknown; anchor?: Record<string, unknown> };
  if (typeof every !== 'string' || !(CALENDAR_UNITS as readonly string[]).includes(every) || typeof timeZone !== 'string' || !anchor) return undefined;
  const fields = ['month', 'day', 'weekday', 'hour', 'minute', 'second'] as const;
  if (!fields.every((f) => Number.isInteger(anchor[f]))) return undefined;
  const a = anchor as unknown as Anchor;
  return new ResolvedCalendarWindow(every as CalendarUnit, timeZone, { month: a.month, day: a.day, weekday: a.weekday, hour: a.hour, minute: a.minute, second: a.second });
}
