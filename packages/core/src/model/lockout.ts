// Progressive lock-out: its option, and the in-memory twin of the strike rules lua/main.lua keeps in the same script call as the limits.
import { ttl } from '../algorithms/twin-math';
import { parseDuration, type Duration } from '../base/duration';
import { invalidOption } from '../base/errors';
import { checkOptionNames, optionNames, optionsObject, wholeNumber } from '../base/validate';

/**
 * Progressive lock-out, decided in the store so every instance agrees. Each consume of a subject
 * that its limits refuse (in this scope) is a strike; from the `after`-th strike on, the subject is
 * locked out for `baseMs x 2^(strikes - after)`, at most `maxMs`, and every consume meanwhile is
 * denied (reason 'locked', Retry-After = the time left, nothing charged, no new strike). An admitted
 * consume does not clear strikes (a successful login does not forgive the guesses before it; call
 * `limiter.reset(subject)` for that); they are forgotten `forgetMs` after the last one.
 */
export interface LockoutOptions {
  /** The strike that first locks the subject out. Whole number from 1 to 1000. Default 3. */
  after?: number;
  /** The first lock-out; each further strike doubles it. Default '1m'. */
  baseMs?: Duration;
  /** The longest lock-out. Default '1h'. */
  maxMs?: Duration;
  /** Strikes are forgotten this long after the last one. Default '1d'. */
  forgetMs?: Duration;
}

export interface ResolvedLockout {
  readonly after: number;
  readonly baseMs: number;
  readonly maxMs: number;
  readonly forgetMs: number;
}

export const LOCKOUT_OPTION_NAMES = optionNames<LockoutOptions>()(['after', 'baseMs', 'maxMs', 'forgetMs']);

const DAY = 86_400_000;

/** Parses `lockout` once; undefined when it is not given (no lock-out). */
export function resolveLockout(raw: LockoutOptions | undefined): ResolvedLockout | undefined {
  if (raw === undefined) return undefined;
  const o = optionsObject('lockout', raw, 'an object { after?, baseMs?, maxMs?, forgetMs? }');
  checkOptionNames('lockout', o, LOCKOUT_OPTION_NAMES);
  const after = o.after === undefined ? 3 : wholeNumber('lockout.after', o.after, 1, 1000);
  const baseMs = parseDuration('lockout.baseMs', o.baseMs ?? '1m', 1, 365 * DAY);
  const maxMs = parseDuration('lockout.maxMs', o.maxMs ?? Math.max(3_600_000, baseMs), 1, 365 * DAY);
  if (maxMs < baseMs) invalidOption('lockout.maxMs', o.maxMs, `at least lockout.baseMs (${baseMs})`);
  const forgetMs = parseDuration('lockout.forgetMs', o.forgetMs ?? DAY, 1, 365 * DAY);
  return { after, baseMs, maxMs, forgetMs };
}

/** The lock key's state: strikes, locked until (ms, 0 when not), the last strike (ms). Lua: HASH { s, u, l }. */
export interface LockState {
  s: number;
  u: number;
  l: number;
}

/** What the lock says now: strikes still remembered, and ms left locked (0: not locked). */
export function lockView(state: LockState | undefined, now: number, lockout: ResolvedLockout): { strikes: number; lockedMs: number } {
  if (!state) return { strikes: 0, lockedMs: 0 };
  return { strikes: now - state.l < lockout.forgetMs ? state.s : 0, lockedMs: Math.max(0, state.u - now) };
}

/** One more strike: the state to write (with its TTL) and the ms it locks the subject out for (0: not yet). */
export function strike(strikes: number, now: number, lockout: ResolvedLockout): { state: LockState; ttlMs: number; lockedMs: number } {
  const s = strikes + 1;
  const lockedMs = s >= lockout.after ? Math.min(lockout.maxMs, lockout.baseMs * 2 ** (s - lockout.after)) : 0;
  return { state: { s, u: lockedMs > 0 ? now + lockedMs : 0, l: now }, ttlMs: ttl(Math.max(lockedMs, lockout.forgetMs)), lockedMs };
}
