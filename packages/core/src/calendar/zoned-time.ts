// Wall-clock time in a named IANA time zone, from the platform's own time-zone database (Intl): instant to wall time and back.

/** A local date and time as a clock on the wall in some zone shows it. `month` from 1, `weekday` 0 = Sunday. */
export interface WallTime {
  readonly year: number;
  readonly month: number;
  readonly day: number;
  readonly hour: number;
  readonly minute: number;
  readonly second: number;
}

const DAY_MS = 86_400_000;

// One formatter per zone: building one costs far more than formatting with it.
const FORMATTERS = new Map<string, Intl.DateTimeFormat>();

function formatterOf(timeZone: string): Intl.DateTimeFormat {
  let f = FORMATTERS.get(timeZone);
  if (f === undefined) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
      era: 'short',
    });
    FORMATTERS.set(timeZone, f);
  }
  return f;
}

/**
 * The zone as given when the platform knows it, else undefined. Kept as given, not as the platform
 * resolves it: ICU names Asia/Kolkata by its older name, Asia/Calcutta, which users do not write.
 */
export function knownZone(timeZone: string): string | undefined {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone });
    return timeZone;
  } catch {
    return undefined;
  }
}

/** The wall time in `timeZone` at the instant `ms` (seconds precision: no zone offset has had seconds since 1972). */
export function wallTimeAt(ms: number, timeZone: string): WallTime {
  const parts = formatterOf(timeZone).formatToParts(new Date(ms));
  const v: Record<string, number> = {};
  let bc = false;
  for (const p of parts) {
    if (p.type === 'era') bc = p.value === 'BC';
    else if (p.type !== 'literal') v[p.type] = Number(p.value);
  }
  return { year: bc ? 1 - v.year : v.year, month: v.month, day: v.day, hour: v.hour, minute: v.minute, second: v.second };
}

/** The wall time read as if it were UTC, in ms: what the zone's offset is added to. */
export function wallAsUtc(w: WallTime): number {
  const d = new Date(0);
  // setUTCFullYear, not Date.UTC: Date.UTC maps the years 0-99 to 1900-1999.
  d.setUTCFullYear(w.year, w.month - 1, w.day);
  d.setUTCHours(w.hour, w.minute, w.second, 0);
  return d.getTime();
}

/** The zone's offset from UTC at the instant `ms`, in ms (New York in winter: -18_000_000). */
export function offsetAt(ms: number, timeZone: string): number {
  const whole = Math.floor(ms / 1000) * 1000;
  return wallAsUtc(wallTimeAt(whole, timeZone)) - whole;
}

/**
 * The instant a wall time in `timeZone` names. A wall time a daylight-saving change skips (02:30 on
 * the day New York springs forward) is moved forward by the gap (03:30 EDT); one it repeats (01:30 on
 * the day New York falls back) is its first occurrence (01:30 EDT). These are the choices of
 * JavaScript's Temporal ('compatible') and of most calendars: a period that should start at a time
 * the day does not have starts as soon after it as the day allows, and never twice.
 */
export function instantOf(w: WallTime, timeZone: string): number {
  const local = wallAsUtc(w);
  // The offsets a day either side: a zone changes its offset at most once in two days.
  const before = offsetAt(local - DAY_MS, timeZone);
  const after = offsetAt(local + DAY_MS, timeZone);
  let found: number | undefined;
  for (const offset of before === after ? [before] : [before, after]) {
    const candidate = local - offset;
    if (candidate + offsetAt(candidate, timeZone) === local && (found === undefined || candidate < found)) found = candidate;
  }
  // Skipped: the earlier offset still applies on the far side of the gap (02:30 EST is 03:30 EDT).
  return found ?? local - before;
}

/** Days in the month (`month` from 1) of the proleptic Gregorian calendar. */
export function daysInMonth(year: number, month: number): number {
  const d = new Date(0);
  d.setUTCFullYear(year, month, 0);
  return d.getUTCDate();
}

/** The civil day number of a date (days since 1970-01-01), and back: calendar arithmetic without a zone. */
export function dayNumber(year: number, month: number, day: number): number {
  return Math.round(wallAsUtc({ year, month, day, hour: 0, minute: 0, second: 0 }) / DAY_MS);
}

export function dateOfDay(n: number): { year: number; month: number; day: number } {
  const d = new Date(n * DAY_MS);
  return { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate() };
}

/** The weekday of a civil day number, 0 = Sunday (1970-01-01 was a Thursday). */
export function weekdayOf(n: number): number {
  return (((n + 4) % 7) + 7) % 7;
}
