// A limiter's limit functions: called per request (after the block cache), each distinct answer resolved once, at most `limitValuesMax` kept.
import { isThenable } from '../base/maybe-promise';
import { FloodgateError } from '../base/errors';
import { warnOnce } from '../base/warnings';
import type { ResolvedLimit } from '../model/limit';
import { answeredUnits, callOption, DYNAMIC_FIELDS, LimitFunctionError, type AnsweredLimit, type LimitContext, type LimitSet } from './dynamic-limits';
import { maxCostOf, resolveLimit, resolveLimits, type LimitOptions, type ResolvedLimiterOptions } from './options';
import { MAX_LEASE_COST } from '../base/validate';

type Answer = { limits: AnsweredLimit[] | undefined; single: AnsweredLimit | undefined };

/** The limit functions of one limiter and the sets their answers resolved to. */
export class LimitValues {
  private readonly sets = new Map<string, LimitSet>();
  private full = false;
  private readonly raw: NonNullable<ResolvedLimiterOptions['dynamic']>;

  constructor(private readonly resolved: ResolvedLimiterOptions) {
    this.raw = resolved.dynamic!;
  }

  /** How many distinct answers are held (at most `limitValuesMax`). */
  get size(): number {
    return this.sets.size;
  }

  /** The set this request is decided with; throws (or rejects with) a LimitFunctionError for a bad answer. */
  answer(subject: string, context: LimitContext): LimitSet | Promise<LimitSet> {
    const { limits, single } = this.raw;
    if (typeof limits === 'function') {
      const got = callOption('limits', limits, subject, context);
      return isThenable(got) ? Promise.resolve(got).then((list) => this.setOf({ limits: list as AnsweredLimit[], single: undefined })) : this.setOf({ limits: got as AnsweredLimit[], single: undefined });
    }
    const list = limits ?? [single!];
    const pending: Promise<unknown>[] = [];
    const answered: AnsweredLimit[] = list.map((l) => {
      const out: Record<string, unknown> = { ...l };
      for (const f of DYNAMIC_FIELDS) {
        const v = callOption(f, out[f], subject, context);
        if (isThenable(v)) pending.push(Promise.resolve(v).then((x) => void (out[f] = x)));
        else out[f] = v;
      }
      return out as AnsweredLimit;
    });
    const done = () => this.setOf(limits ? { limits: answered, single: undefined } : { limits: undefined, single: answered[0] });
    return pending.length === 0 ? done() : Promise.all(pending).then(done);
  }

  /** The resolved set of an answer: from the memo, else resolved (and kept while below the ceiling). */
  private setOf(answer: Answer): LimitSet {
    const memoKey = keyOf(answer);
    const hit = this.sets.get(memoKey);
    if (hit) return hit;
    const set = this.resolve(answer);
    if (this.sets.size < this.raw.valuesMax) this.sets.set(memoKey, set);
    else if (!this.full) {
      this.full = true;
      const { failure, warnings } = this.resolved;
      warnOnce(
        failure.logger,
        warnings,
        'FG_LIMIT_VALUES_CEILING',
        `a limit function has returned ${this.raw.valuesMax} distinct values on one limiter (limitValuesMax): further new values are resolved on each request and not kept, so memory stays bounded and every request is still decided with the limit its function returned (docs/runtime-limits.md#distinct-values)`,
      );
    }
    return set;
  }

  private resolve(answer: Answer): LimitSet {
    const { ceiling, defaults, windowFunction } = this.raw;
    const capped = (field: string, value: number) =>
      void warnOnce(this.resolved.failure.logger, this.resolved.warnings, 'FG_LIMIT_CAPPED', `a ${field} function returned ${value}, above limitCeiling (${ceiling}): the ceiling was used (docs/runtime-limits.md#ceiling)`);
    let limits: ResolvedLimit[];
    try {
      if (answer.limits !== undefined) {
        if (!Array.isArray(answer.limits)) throw new LimitFunctionError('invalid', `the limits function returned ${typeof answer.limits}, not an array`);
        const checked = answer.limits.map((l) => unitsOf(l, ceiling, capped));
        limits = resolveLimits(checked, 'limits', defaults);
      } else {
        limits = [resolveLimit(unitsOf(answer.single!, ceiling, capped) as LimitOptions, {}, 'options', 'default')];
      }
    } catch (error) {
      if (error instanceof LimitFunctionError) throw error;
      throw new LimitFunctionError('invalid', `a limit function's answer is not a valid limit (${error instanceof FloodgateError ? error.message.replace(/ \[FG_.*$/, '') : String(error)})`);
    }
    // A window decided per request is part of the key: a state kept for one window length is never read with another.
    if (windowFunction) limits = limits.map((l) => ({ ...l, keySuffix: `${l.keySuffix}.w${l.windowMs}` }));
    const statics = this.resolved.limits;
    const sameKeys = limits.length === statics.length && limits.every((l, i) => l.keySuffix === statics[i].keySuffix);
    const concurrency = this.resolved.concurrency;
    const all = concurrency ? [...limits, concurrency] : limits;
    const maxCost = concurrency ? Math.min(maxCostOf(limits), concurrency.limit, MAX_LEASE_COST) : maxCostOf(limits);
    return { limits: all, storeLimits: all.map((l) => l.store), maxCost, sameKeys };
  }
}

/** An answered limit with its unit counts checked (and capped at the ceiling). */
function unitsOf(l: AnsweredLimit, ceiling: number | undefined, capped: (field: string, value: number) => void): AnsweredLimit {
  if (!l || typeof l !== 'object') throw new LimitFunctionError('invalid', `a limits function returned ${String(l)} where a limit object goes`);
  const out = { ...l };
  for (const f of ['limit', 'burst'] as const) if (out[f] !== undefined) out[f] = answeredUnits(f, out[f], ceiling, capped);
  if (out.refillPerSecond !== undefined) out.refillPerSecond = answeredUnits('refillPerSecond', out.refillPerSecond, undefined, capped);
  return out;
}

/** The memo key of an answer: its values, in a fixed order. */
function keyOf(answer: Answer): string {
  const list = answer.limits ?? [answer.single!];
  if (!Array.isArray(list)) return `!${typeof list}`;
  let key = '';
  for (const l of list) {
    if (!l || typeof l !== 'object') return '!bad';
    key += `${l.name ?? ''}|${l.algorithm ?? ''}|${String(l.limit)}|${String(l.windowMs)}|${String(l.burst)}|${String(l.refillPerSecond)};`;
  }
  return key;
}
