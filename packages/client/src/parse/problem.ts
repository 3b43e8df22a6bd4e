// A problem+json body's fields (RFC 9457) as rate-limit information: the type, violated-policies, a retry hint.

/** The draft's problem types (draft-ietf-httpapi-ratelimit-headers-10 s5). */
export const PROBLEM_TYPES = {
  quotaExceeded: 'https://iana.org/assignments/http-problem-types#quota-exceeded',
  temporaryReducedCapacity: 'https://iana.org/assignments/http-problem-types#temporary-reduced-capacity',
  abnormalUsageDetected: 'https://iana.org/assignments/http-problem-types#abnormal-usage-detected',
} as const;

export interface ProblemInfo {
  readonly type?: string;
  readonly title?: string;
  readonly status?: number;
  readonly detail?: string;
  /** The draft's `violated-policies` member: the names of the policies this request exceeded. */
  readonly violatedPolicies: readonly string[];
  /**
   * A retry time in ms from a `retry-after`, `retryAfter` or `retry_after` member in seconds: not in
   * the draft, but some APIs send it in the body; used only when no Retry-After field came.
   */
  readonly retryAfterMs?: number;
}

/** Is this content type problem details (`application/problem+json`, parameters allowed)? */
export function isProblemJson(contentType: string | undefined): boolean {
  return contentType !== undefined && /^\s*application\/problem\+json\s*(;|$)/i.test(contentType);
}

/** The fields of a problem details body (a JSON text or the parsed object), or undefined when it is not one. */
export function parseProblemDetails(body: unknown): ProblemInfo | undefined {
  let value = body;
  if (typeof body === 'string') {
    try {
      value = JSON.parse(body);
    } catch {
      return undefined;
    }
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const o = value as Record<string, unknown>;
  const text = (v: unknown) => (typeof v === 'string' ? v : undefined);
  const violated = Array.isArray(o['violated-policies']) ? (o['violated-policies'] as unknown[]).filter((p): p is string => typeof p === 'string') : [];
  const hint = [o['retry-after'], o.retryAfter, o.retry_after].find((v) => typeof v === 'number' && Number.isFinite(v) && v >= 0) as number | undefined;
  const info: { -readonly [K in keyof ProblemInfo]: ProblemInfo[K] } = { violatedPolicies: violated };
  if (text(o.type) !== undefined) info.type = text(o.type);
  if (text(o.title) !== undefined) info.title = text(o.title);
  if (typeof o.status === 'number' && Number.isInteger(o.status)) info.status = o.status;
  if (text(o.detail) !== undefined) info.detail = text(o.detail);
  if (hint !== undefined) info.retryAfterMs = hint * 1000;
  return info;
}
