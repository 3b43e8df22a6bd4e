// Limits that are functions of the request: evaluated after the block cache, each distinct answer resolved once into a bounded set of limit states.
import { isThenable } from '../base/maybe-promise';
import { FloodgateError, withoutStack } from '../base/errors';
import { MAX_UNITS } from '../base/validate';
import { warnOnce, type WarningCode } from '../base/warnings';
import type { Logger } from '../base/logger';
import type { Duration } from '../base/duration';
import type { ResolvedLimit } from '../model/limit';

/** What a limit function is told besides the subject: the consume's scope and cost, and (HTTP) the framework's request. */
export interface LimitContext {
  readonly scope?: string;
  readonly cost?: number;
  /** The framework's request, when an HTTP adapter decides it; undefined for a direct `consume`. */
  readonly request?: unknown;
}

/** A value of a limit decided per request (core: a function of the subject and the consume's context); sync or async. */
export type PerRequest<T> = T | ((subject: string, context: LimitContext) => T | PromiseLike<T>);

/** The fields of one limit a function may decide. */
export const DYNAMIC_FIELDS = ['limit', 'windowMs', 'burst', 'refillPerSecond'] as const;
export type DynamicField = (typeof DYNAMIC_FIELDS)[number];

/** One limit's options as the functions answered them: plain values, ready for resolveLimit. */
export type AnsweredLimit = { name?: string; algorithm?: string; limit?: number; windowMs?: Duration; burst?: number; refillPerSecond?: number; window?: unknown };

/** Why a limit function's answer was not used (each logged once per limiter). */
export type LimitFailure = 'threw' | 'rejected' | 'not-a-number' | 'below-one' | 'too-large' | 'invalid';

/** Default `limitValuesMax`: distinct answers one limiter keeps resolved. */
export const DEFAULT_LIMIT_VALUES_MAX = 1000;

/** A set of limits resolved from one distinct answer: what one request is decided with. */
export interface LimitSet {
  /** The rate limits, then the in-flight limit when there is one. */
  readonly limits: readonly ResolvedLimit[];
  readonly storeLimits: readonly ResolvedLimit['store'][];
  readonly maxCost: number;
  /** True when every key suffix is the static limits' (only numbers changed): the subject's static keys serve. */
  readonly sameKeys: boolean;
}

/** A bad answer, caught inside the limiter and answered as a refusal (never thrown past it). Made without a stack: a request may cause one. */
export class LimitFunctionError extends FloodgateError {
  readonly cause_: LimitFailure;
  constructor(cause: LimitFailure, message: string) {
    super('FG_LIMIT_FUNCTION', message, 'limit');
    this.cause_ = cause;
  }
}

const failed = (cause: LimitFailure, message: string) => withoutStack(() => new LimitFunctionError(cause, message));

/** True when any of these limit options is a function (or `limits` is). */
export function hasFunctions(options: { limits?: unknown } & Record<string, unknown>): boolean {
  if (typeof options.limits === 'function') return true;
  if (DYNAMIC_FIELDS.some((f) => typeof options[f] === 'function')) return true;
  return Array.isArray(options.limits) && options.limits.some((l) => l && typeof l === 'object' && DYNAMIC_FIELDS.some((f) => typeof (l as Record<string, unknown>)[f] === 'function'));
}

/** Checks one answered number: a whole number of units, capped at `ceiling` (a route's `limitCeiling`); else a LimitFunctionError. */
export function answeredUnits(field: string, value: unknown, ceiling: number | undefined, capped: (field: string, value: number) => void): number {
  if (typeof value !== 'number' || Number.isNaN(value)) throw failed('not-a-number', `the ${field} function returned ${String(value)}, not a number`);
  if (value < 1) throw failed('below-one', `the ${field} function returned ${value}, below 1`);
  if (ceiling !== undefined && value > ceiling) {
    capped(field, value);
    return ceiling;
  }
  if (!Number.isFinite(value) || value > MAX_UNITS) throw failed('too-large', `the ${field} function returned ${value}, above ${MAX_UNITS} (declare limitCeiling to cap answers instead)`);
  if (field !== 'refillPerSecond' && !Number.isInteger(value)) throw failed('invalid', `the ${field} function returned ${value}, not a whole number`);
  return value;
}

/** Calls one option's function, turning a throw or a rejection into a LimitFunctionError; a plain value passes. */
export function callOption(field: string, value: unknown, subject: string, context: LimitContext): unknown {
  if (typeof value !== 'function') return value;
  let raw: unknown;
  try {
    raw = (value as (s: string, c: LimitContext) => unknown)(subject, context);
  } catch (error) {
    throw failed('threw', `the ${field} function threw: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (!isThenable(raw)) return raw;
  return Promise.resolve(raw).catch((error: unknown) => {
    throw failed('rejected', `the ${field} function rejected: ${error instanceof Error ? error.message : String(error)}`);
  });
}

/** Logs a bad answer once per cause and limiter logger (FG_LIMIT_FUNCTION_FAILED), with the decision taken. */
export function reportBadAnswer(logger: Pick<Logger, 'warn'>, on: ReadonlySet<WarningCode>, error: LimitFunctionError): void {
  const cause = error.cause_ === 'rejected' ? 'threw' : error.cause_;
  warnOnce(
    logger,
    on,
    'FG_LIMIT_FUNCTION_FAILED',
    `${error.message}: the request was refused (503, reason 'fail-closed', Retry-After 1 s) and nothing was counted; later answers of this kind are refused the same way without another line (docs/runtime-limits.md#bad-answers)`,
    `FG_LIMIT_FUNCTION_FAILED ${cause}`,
  );
}
