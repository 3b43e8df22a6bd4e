// Route option `shape` (shaping): its options, parsed once against the limiter it shapes, and a route's count of held requests.
import type { ResolvedLimiterOptions } from '../engine/options';
import { invalidOption } from '../base/errors';
import { checkOptionNames, wholeNumber } from '../base/validate';

/** Route option `shape`: hold a request over its rate until it conforms, instead of refusing it (docs/shaping.md). */
export interface ShapeOptions {
  /**
   * The longest a request is held for its slot, in ms (1 to 300_000). A request whose slot is
   * further away is refused (429) as without `shape`, and charged nothing. Required.
   */
  maxDelayMs: number;
  /**
   * Most requests this route holds at once on this instance (decisions in flight included): the
   * bound on the timers, sockets and memory holding costs. Past it, a request over its rate is
   * refused (429) at once. 1 to 100_000; default 1000.
   */
  maxWaiting?: number;
}

/** `shape`, parsed; and the route's count of requests held now (one per pipeline, this instance). */
export interface ResolvedShape {
  readonly maxDelayMs: number;
  readonly maxWaiting: number;
}

/** Default `shape.maxWaiting`: about 1000 held sockets and timers, a few hundred KB (docs/shaping.md). */
export const DEFAULT_MAX_WAITING = 1000;
const SHAPE_NAMES = ['maxDelayMs', 'maxWaiting'];
/** The algorithms that know the instant a request conforms, and so can reserve it. */
const SHAPING_ALGORITHMS: readonly string[] = ['gcra', 'token-bucket'];

/** Parses `shape` against the limiter it shapes; FG_INVALID_OPTION naming the option, the value and what is valid. */
export function resolveShape(value: unknown, limiter: ResolvedLimiterOptions): ResolvedShape | undefined {
  if (value === undefined || value === false) return undefined;
  if (!value || typeof value !== 'object' || Array.isArray(value)) invalidOption('shape', value, 'an object { maxDelayMs, maxWaiting? }, or false');
  checkOptionNames('shape', value, SHAPE_NAMES);
  const o = value as ShapeOptions;
  if (o.maxDelayMs === undefined) invalidOption('shape.maxDelayMs', o.maxDelayMs, 'a whole number of ms from 1 to 300000 (required)');
  const maxDelayMs = wholeNumber('shape.maxDelayMs', o.maxDelayMs, 1, 300_000);
  const maxWaiting = wholeNumber('shape.maxWaiting', o.maxWaiting ?? DEFAULT_MAX_WAITING, 1, 100_000);
  for (const l of limiter.limits) {
    if (!SHAPING_ALGORITHMS.includes(l.algorithm)) {
      invalidOption('algorithm', l.algorithm, `'gcra' or 'token-bucket' with \`shape\` (limit '${l.name}'): only they know the instant a request conforms and can reserve it; a window algorithm would refuse as without \`shape\` (docs/shaping.md)`);
    }
  }
  if (limiter.concurrency) invalidOption('concurrency', 'set', 'no `concurrency` with `shape`: a held request would hold its in-flight slot while it waits (docs/shaping.md)');
  if (limiter.hotKeys) invalidOption('hotKeys', 'set', 'no `hotKeys` with `shape`: a held slot is reserved in the shared store, which local leases would skip (docs/shaping.md)');
  return { maxDelayMs, maxWaiting };
}

/** One route's holds on this instance: the count bounded by maxWaiting. */
export class Holds {
  waiting = 0;
  constructor(readonly shape: ResolvedShape) {}
}
