// Subject overrides: written under the subject's own hash tag, read by the decision's script (one GET, same call), expiring by themselves.
import { ALGORITHM } from '../algorithms/registry';
import { parseDuration, type Duration } from '../base/duration';
import { FloodgateError, invalidOption } from '../base/errors';
import { MAX_UNITS } from '../base/validate';
import type { Logger } from '../base/logger';
import type { ResolvedLimit } from '../model/limit';
import type { Store } from '../stores/store';
import { overrideValue } from '../stores/override-value';

/** What `limiter.override` sets: one number for every rate limit, or a number per policy name. 0 refuses until it expires. */
export type OverrideLimits = number | Readonly<Record<string, number>>;

export interface OverrideOptions {
  /** How long it lasts (ms or '2h'); it expires by itself, by the store's clock. Required. */
  ttlMs: Duration;
  /** Why, for the audit hook and `overrides()` (at most 200 characters). */
  reason?: string;
  /** The scope (route) of the subject's buckets, as consume's. Default ''. */
  scope?: string;
  /** How `overrides()` names the target (at most 200 characters). Default: the subject's key digest, never the raw subject (it may be an API key). */
  label?: string;
}

/** One override, as `overrides()` lists it and the audit hook reports it. */
export interface OverrideRecord {
  readonly target: string;
  readonly scope: string;
  /** The capacity set per policy. */
  readonly limits: Readonly<Record<string, number>>;
  readonly ttlMs: number;
  readonly reason?: string;
  /** This process's clock when it was set (ms since the epoch); the expiry itself is the store's. */
  readonly setAt: number;
}

/** What the `onOverride` hook is told: an override set or cleared through this limiter. */
export interface OverrideEvent {
  readonly action: 'set' | 'clear';
  readonly target: string;
  readonly scope: string;
  /** For 'set': the record written. */
  readonly record?: OverrideRecord;
}

const TEXT_MAX = 200;

function text(option: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length > TEXT_MAX) invalidOption(option, value, `a string of at most ${TEXT_MAX} characters`);
  return value;
}

/** The store of a limiter with `overrides: true`, or FG_OVERRIDES_OFF. */
export function overrideStore(enabled: boolean, store: Store): Required<Pick<Store, 'putOverride' | 'dropOverride' | 'listOverrides'>> & Pick<Store, 'putBroad' | 'dropBroad' | 'readBroad'> {
  if (!enabled) throw new FloodgateError('FG_OVERRIDES_OFF', 'This limiter reads no overrides: build it with `overrides: true` (each decision then reads its subject\'s override in the same store call).', 'overrides');
  if (!store.putOverride || !store.dropOverride || !store.listOverrides) {
    throw new FloodgateError('FG_OVERRIDES_OFF', `The store '${store.name}' keeps no overrides (it has no putOverride, dropOverride, listOverrides).`, 'overrides');
  }
  return store as Required<Pick<Store, 'putOverride' | 'dropOverride' | 'listOverrides'>> & Pick<Store, 'putBroad' | 'dropBroad' | 'readBroad'>;
}

/**
 * Checks an override against the limiter's rate limits and builds the stored string: each value a
 * whole number from 0 to the ceiling (or the algorithm's most); a rate limit's refill scaled with it.
 */
export function overrideOf(limits: readonly ResolvedLimit[], given: OverrideLimits, ceiling: number | undefined): { value: string; set: Record<string, number> } {
  const rate = limits.filter((l) => l.algorithm !== 'concurrency');
  const set: Record<string, number> = {};
  if (typeof given === 'number') for (const l of rate) set[l.name] = given;
  else if (given && typeof given === 'object' && !Array.isArray(given)) {
    for (const [name, v] of Object.entries(given)) {
      if (!rate.some((l) => l.name === name)) invalidOption(`override limits.${name}`, v, `a policy of this limiter (${rate.map((l) => l.name).join(', ')})`);
      set[name] = v;
    }
  } else invalidOption('override limits', given, 'a number, or an object of numbers by policy name');
  const entries = rate
    .filter((l) => set[l.name] !== undefined)
    .map((l) => {
      const most = Math.min(ceiling ?? MAX_UNITS, ALGORITHM[l.algorithm].maxLimit ?? MAX_UNITS);
      const cap = set[l.name];
      if (typeof cap !== 'number' || !Number.isInteger(cap) || cap < 0 || cap > most) {
        invalidOption(`override limits.${l.name}`, cap, `a whole number from 0 to ${most}${ceiling !== undefined ? ' (limitCeiling)' : ''}`);
      }
      const rateNow = 'refillPerSecond' in l.store ? l.store.refillPerSecond : undefined;
      return { suffix: l.keySuffix, cap, rate: rateNow === undefined || cap === 0 ? undefined : (rateNow * cap) / l.limit };
    });
  return { value: overrideValue(entries), set };
}

/** The parsed options of one override call. */
export function overrideCall(options: OverrideOptions, digest: string): { ttlMs: number; reason: string | undefined; scope: string; target: string } {
  if (!options || typeof options !== 'object') invalidOption('override options', options, 'an object { ttlMs, reason?, scope?, label? }');
  const ttlMs = parseDuration('override ttlMs', options.ttlMs);
  const scope = options.scope ?? '';
  if (typeof scope !== 'string') invalidOption('override scope', scope, 'a string');
  return { ttlMs, reason: text('override reason', options.reason), scope, target: text('override label', options.label) ?? digest };
}

/** Calls the audit hook; a throwing hook is logged, never thrown into the caller's override. */
export function audit(hook: ((event: OverrideEvent) => void) | undefined, event: OverrideEvent, logger: Pick<Logger, 'error'>): void {
  if (!hook) return;
  try {
    hook(event);
  } catch (error) {
    try {
      logger.error('[floodgate] the onOverride hook threw', { error });
    } catch {
      // A broken logger must not break an override.
    }
  }
}
