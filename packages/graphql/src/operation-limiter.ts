// The framework-free step every plugin shares: an operation's cost, its maximum, a dry run, the reservation through the HTTP pipeline, and the settle with the actual cost.
import { createHttpLimiter, FloodgateError, type Decision, type HeaderPair, type HttpLimiter, type HttpResult, type RequestFacts, type Health, type HealthOptions } from '@floodgate/core/http';
import type { LimitDecision } from '@floodgate/core';
import { actualCost, estimateCost, type OperationInput } from './cost/estimate';
import { resolveGraphqlOptions, type GraphqlRateLimitOptions, type OperationRequest, type ResolvedGraphqlOptions } from './options';

/** Shopify's `throttleStatus`: the bucket's size, what is left now, and how many units come back each second. */
export interface ThrottleStatus {
  readonly maximumAvailable: number;
  readonly currentlyAvailable: number;
  readonly restoreRate: number;
}

/** `extensions.cost`, in Shopify's shape. `actualQueryCost` is null when the operation did not run; `throttleStatus` null when the store did not answer. */
export interface CostExtension {
  readonly requestedQueryCost: number;
  readonly actualQueryCost: number | null;
  readonly throttleStatus: ThrottleStatus | null;
}

/** Why an operation was refused: the GraphQL error's code, the HTTP status a server that allows one answers with, and the wait. */
export interface Refusal {
  readonly code: 'THROTTLED' | 'MAX_COST_EXCEEDED' | 'SERVICE_UNAVAILABLE' | 'UNAUTHENTICATED' | 'BAD_REQUEST';
  readonly message: string;
  readonly status: 400 | 401 | 429 | 503;
  /** ms until an operation of this cost would be admitted; null when unknown or never. */
  readonly retryAfterMs: number | null;
}

export type Admission =
  | { readonly kind: 'refused'; readonly refusal: Refusal; readonly headers: readonly HeaderPair[]; readonly cost: CostExtension }
  | { readonly kind: 'dry-run'; readonly headers: readonly HeaderPair[]; readonly cost: CostExtension }
  | { readonly kind: 'admitted'; readonly headers: readonly HeaderPair[]; readonly cost: CostExtension; finish(data: unknown): Promise<CostExtension> };

/** The HTTP request's facts a plugin reads: the client IP under the trust-proxy rules, and the headers (lower-case names). */
export type HttpFacts = Pick<RequestFacts, 'ip' | 'headers' | 'trustProxy'>;

export interface OperationLimiter {
  readonly options: ResolvedGraphqlOptions;
  readonly http: HttpLimiter<OperationRequest>;
  /** Decides one operation before it runs. Rejects only when an app function (estimate, key, skip) fails or returns a bad cost. */
  begin(facts: HttpFacts, operation: OperationInput, context: unknown): Promise<Admission>;
  /**
   * Charges one subscription event after the first (whose cost settles the subscription's
   * reservation): its actual cost from its `data`, consumed now. 'refused' when it does not fit
   * (the plugin replaces the event with the THROTTLED error). Never rejects for a limit.
   */
  event(facts: HttpFacts, operation: OperationInput, context: unknown, data: unknown): Promise<Admission>;
  health(options?: HealthOptions): Health;
}

function checkedCost(raw: unknown): number {
  if (typeof raw === 'number' && Number.isSafeInteger(raw) && raw >= 0) return raw;
  throw new FloodgateError('FG_INVALID_COST', `the estimate function returned ${String(raw)}; expected a whole number from 0`, 'estimate');
}

/** The rate limit a client paces on: the one with the least left (the in-flight limit is not a rate). */
export function throttleStatusOf(limits: readonly LimitDecision[]): ThrottleStatus | null {
  let pick: LimitDecision | undefined;
  for (const l of limits) if (l.quotaUnit === undefined && (!pick || l.remaining < pick.remaining)) pick = l;
  if (!pick) return null;
  const restoreRate = pick.windowMs > 0 ? Math.round((pick.limit * 1000 * 1000) / pick.windowMs) / 1000 : 0;
  return { maximumAvailable: pick.limit, currentlyAvailable: Math.max(0, pick.remaining), restoreRate };
}

const statusOf = (d: Decision | undefined) => (d && !d.degraded ? throttleStatusOf(d.limits) : null);

function refusalOf(result: HttpResult): Refusal {
  const d = result.decision;
  const wait = d && d.retryAfterMs >= 0 ? d.retryAfterMs : null;
  switch (result.status) {
    case 401:
      return { code: 'UNAUTHENTICATED', message: 'Unknown API key', status: 401, retryAfterMs: null };
    case 400:
      return { code: 'BAD_REQUEST', message: 'Malformed rate-limit key', status: 400, retryAfterMs: null };
    case 503:
      return { code: 'SERVICE_UNAVAILABLE', message: 'Rate limiter unavailable; retry later', status: 503, retryAfterMs: wait };
    default:
      return { code: 'THROTTLED', message: wait === null ? 'Throttled: this operation costs more than the limit allows' : `Throttled: retry in ${Math.ceil(wait / 1000)} s`, status: 429, retryAfterMs: wait };
  }
}

/** Builds the limiter once; FG_INVALID_OPTION / FG_UNKNOWN_OPTION for a bad option, now. */
export function createOperationLimiter(options: GraphqlRateLimitOptions = {}): OperationLimiter {
  const { own, core } = resolveGraphqlOptions(options);
  const http = createHttpLimiter<OperationRequest>({ ...core, cost: (r) => r.cost }, { label: 'GraphQL rateLimit' });
  const ceiling = http.options.limiter.maxCost;
  if (own.maxOperationCost !== undefined && own.maxOperationCost > ceiling) {
    // A larger requested cost could never fit the smallest limit: refused at every try.
    throw new FloodgateError('FG_INVALID_OPTION', `maxOperationCost ${own.maxOperationCost} is above the smallest limit (${ceiling}); expected a whole number from 1 to ${ceiling}`, 'maxOperationCost');
  }
  const maxCost = own.maxOperationCost ?? ceiling;

  async function requested(operation: OperationInput, context: unknown): Promise<{ cost: number; tooComplex?: string }> {
    if (own.estimate) return { cost: checkedCost(await own.estimate(operation, context)) };
    return estimateCost(own.settings, operation);
  }

  function actualOf(operation: OperationInput, data: unknown, context: unknown, reserved: number): number {
    try {
      const a = own.actual === 'response' ? actualCost(own.settings, operation, data) : own.actual === false ? reserved : own.actual(operation, data, context);
      return typeof a === 'number' && Number.isSafeInteger(a) && a >= 0 ? a : reserved;
    } catch {
      // A failing actual-cost function keeps the reservation charged: the safe side.
      return reserved;
    }
  }

  async function begin(facts: HttpFacts, operation: OperationInput, context: unknown): Promise<Admission> {
    const full: RequestFacts = { ...facts, method: 'POST', route: undefined };
    const est = await requested(operation, context);
    const dry = own.dryRunHeader !== undefined && facts.headers[own.dryRunHeader] !== undefined;
    if (dry) {
      const result = await http.handle(full, { context, operation, cost: 0 });
      return { kind: 'dry-run', headers: result.headers, cost: { requestedQueryCost: est.cost, actualQueryCost: null, throttleStatus: statusOf(result.decision) } };
    }
    if (est.tooComplex !== undefined || est.cost > maxCost) {
      const why = est.tooComplex === 'depth' ? 'nests deeper than maxDepth' : est.tooComplex === 'fields' ? 'selects more fields than maxFields' : `costs ${est.cost}, above the maximum of ${maxCost}`;
      const refusal: Refusal = { code: 'MAX_COST_EXCEEDED', message: `This operation ${why}`, status: 400, retryAfterMs: null };
      return { kind: 'refused', refusal, headers: [], cost: { requestedQueryCost: est.cost, actualQueryCost: null, throttleStatus: null } };
    }
    const result = await http.handle(full, { context, operation, cost: est.cost });
    const cost: CostExtension = { requestedQueryCost: est.cost, actualQueryCost: null, throttleStatus: statusOf(result.decision) };
    if (result.status !== 'next') return { kind: 'refused', refusal: refusalOf(result), headers: result.headers, cost };
    const reservation = result.reservation;
    return {
      kind: 'admitted',
      headers: result.headers,
      cost,
      async finish(data) {
        const actual = actualOf(operation, data, context, est.cost);
        if (!reservation || own.actual === false) return { ...cost, actualQueryCost: own.actual === false ? est.cost : actual };
        const settled = await reservation.settle(actual);
        const throttleStatus = settled.limits.length > 0 ? throttleStatusOf(settled.limits) : cost.throttleStatus;
        return { requestedQueryCost: est.cost, actualQueryCost: actual, throttleStatus };
      },
    };
  }

  async function event(facts: HttpFacts, operation: OperationInput, context: unknown, data: unknown): Promise<Admission> {
    // An event costs what it holds, at most the per-operation maximum (what the subscription was admitted under).
    const actual = Math.min(actualOf(operation, data, context, maxCost), maxCost);
    const result = await http.handle({ ...facts, method: 'POST', route: undefined }, { context, operation, cost: actual });
    const cost: CostExtension = { requestedQueryCost: actual, actualQueryCost: result.status === 'next' ? actual : null, throttleStatus: statusOf(result.decision) };
    if (result.status !== 'next') return { kind: 'refused', refusal: refusalOf(result), headers: result.headers, cost };
    return { kind: 'admitted', headers: result.headers, cost, finish: () => Promise.resolve(cost) };
  }

  return { options: own, http, begin, event, health: (o) => http.health(o) };
}
