// Durations: a number of milliseconds, or a string such as '500ms', '30s', '1m', '2h', '1d'. Parsed here only.
import { invalidOption } from './errors';

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

export type Duration = number | `${number}${'ms' | 's' | 'm' | 'h' | 'd'}` | `${number} ${'ms' | 's' | 'm' | 'h' | 'd'}`;

/** Parses a duration option into whole ms within [min, max], or throws naming the option. */
/** The longest window (and the longest time a rate limit takes to refill its burst): 365 days. */
export const MAX_WINDOW_MS = 365 * 86_400_000;

export function parseDuration(option: string, value: unknown, min = 1, max = MAX_WINDOW_MS): number {
  let ms: number | undefined;
  if (typeof value === 'number') ms = value;
  else if (typeof value === 'string') {
    const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/.exec(value);
    if (m) ms = Number(m[1]) * UNITS[m[2]];
  }
  if (ms === undefined || !Number.isInteger(ms) || ms < min || ms > max) {
    invalidOption(
      option,
      value,
      `a whole number of milliseconds from ${min} to ${max}, or a string like '30s', '1m', '1h'`,
    );
  }
  return ms;
}
