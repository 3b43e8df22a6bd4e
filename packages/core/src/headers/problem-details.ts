// The default 429 and 503 bodies: RFC 9457 problem details, with the draft's quota-exceeded type.
import type { Decision } from '../model/decision';
import { MAX_LEASE_COST } from '../base/validate';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';
/** draft-ietf-httpapi-ratelimit-headers-10 s5.1. */
export const QUOTA_EXCEEDED_TYPE = 'https://iana.org/assignments/http-problem-types#quota-exceeded';
/** draft-ietf-httpapi-ratelimit-headers-10 s5.2: a request refused because the service sheds load. */
export const TEMPORARY_REDUCED_CAPACITY_TYPE = 'https://iana.org/assignments/http-problem-types#temporary-reduced-capacity';

export interface ProblemDetails {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
  /** Names of the policies this request exceeded (the draft's extension member). */
  readonly 'violated-policies'?: readonly string[];
}

/**
 * 429 for a limited decision (with the Retry-After seconds it was sent with), 429 naming the
 * lock-out for a locked one (its Retry-After is the lock's time left), 429 saying "never" for a
 * cost above the limit, 503 when the store failed and the failure mode is closed.
 */
export function problemDetails(decision: Decision, cost: number, retryAfterSeconds?: number): ProblemDetails {
  if (decision.reason === 'fail-closed') {
    return {
      type: 'about:blank',
      title: 'Service Unavailable',
      status: 503,
      detail: `Rate limiting is unavailable, so this endpoint refuses requests for now; retry in ${retryAfterSeconds ?? 1} seconds.`,
    };
  }
  if (decision.reason === 'shed') {
    return {
      type: TEMPORARY_REDUCED_CAPACITY_TYPE,
      title: 'Temporary Reduced Capacity',
      status: 503,
      detail: `The service is shedding load, lower priority requests first; retry in ${retryAfterSeconds ?? 1} seconds.`,
    };
  }
  const violated = decision.limits.filter((l) => !l.allowed).map((l) => l.policy);
  if (decision.retryAfterMs < 0) {
    const smallest = decision.limits.length > 0 ? Math.min(...decision.limits.map((l) => l.limit)) : decision.limit;
    // An in-flight limit above MAX_LEASE_COST still takes at most that many slots per request (concurrency.md#cost).
    const lease = decision.limits.some((l) => l.quotaUnit === 'concurrent-requests') && cost > MAX_LEASE_COST && (smallest ?? 0) >= cost;
    const bound = lease ? `the ${MAX_LEASE_COST} slots one request may hold at once` : `the limit of ${smallest}`;
    return {
      type: QUOTA_EXCEEDED_TYPE,
      title: 'Quota Exceeded',
      status: 429,
      detail: `This request costs ${cost} units, more than ${bound}: it can never be admitted, so retrying will not help.`,
      'violated-policies': violated,
    };
  }
  const retry = retryAfterSeconds ?? Math.ceil(decision.retryAfterMs / 1000);
  return {
    type: QUOTA_EXCEEDED_TYPE,
    title: 'Quota Exceeded',
    status: 429,
    detail:
      decision.reason === 'locked'
        ? `Too many refused requests: locked out for now, each further lock-out longer; retry in ${retry} seconds.`
        : `Too many requests: retry in ${retry} seconds.`,
    'violated-policies': violated,
  };
}
