// The pacing options: their JSDoc and defaults, parsed once at construction into a resolved object, with clear errors.
import { FloodgateClientError, invalidOption, type WaitReason } from './errors';

/** One wait the client is about to make, for logs and metrics. */
export interface WaitEvent {
  /** The scope (by default the origin) whose state asked for the wait. */
  readonly scope: string;
  readonly reason: WaitReason;
  /** How long, in ms (Infinity: until a request in flight ends, bounded by the call's budget). */
  readonly waitMs: number;
  /** The policy that ran out, for quota waits ('' for dialects that name none). */
  readonly policy?: string;
  /** The status that asked for it, for retry-after waits. */
  readonly status?: number;
}

export interface PacingOptions {
  /**
   * The longest one call may spend waiting, in ms, summed over its waits (for quota before it is
   * sent, and for Retry-After before a retry). A wait that would go past it fails at once with a
   * RateLimitWaitError (code FG_CLIENT_WAIT_EXCEEDS_LIMIT) instead of sleeping first. A call can
   * lower or raise it for itself. `Infinity` waits as long as the server says. Default 60_000.
   */
  maxWaitMs?: number;
  /**
   * Up to this many ms of random delay added to every wait for a reset or a Retry-After, so clients
   * told the same moment do not come back in one wave; a wait for a quota's reset draws at most a
   * tenth of itself (a sliding window's next unit 200 ms away is not made up to 450 ms away). Only
   * ever added: a wait is never shorter than the server asked. Default 250.
   */
  jitterMs?: number;
  /** How many times one call retries a 429 or 503 that carries Retry-After. Default 2. */
  maxRetries?: number;
  /**
   * The methods that may be retried after a 429 or 503. Default the idempotent ones (RFC 9110
   * s9.2.2): GET, HEAD, OPTIONS, PUT, DELETE, TRACE. A POST is paced before it is sent all the same;
   * only its retry is left to the caller.
   */
  retryMethods?: readonly string[];
  /** The statuses retried when they carry Retry-After (header, or a problem+json member). Default [429, 503]. */
  retryStatuses?: readonly number[];
  /**
   * Which requests share one rate-limit state. Default the origin (scheme, host and port): every
   * policy and partition a server reports is kept apart inside it, and a request waits for every
   * policy of its scope that ran out. Return e.g. origin + first path segment for servers that keep
   * separate buckets per route, so one exhausted route does not hold back the others.
   */
  scope?: (url: URL) => string;
  /**
   * The longest one answer of a server may hold a scope back, in ms: a Retry-After (field or
   * problem+json member), a quota's reset and the spacing learned from Retry-After are each believed
   * up to this, so `Retry-After: 1e20` from a broken or hostile server costs at most this long; when
   * it has passed, one request goes to ask again (and a server that still refuses says so again).
   * From 1 to 2147483647 (what a timer can hold). Default 300_000 (5 minutes).
   */
  maxHoldMs?: number;
  /**
   * How fast the spacing learned from a server that sends only Retry-After wears off once the server
   * answers normally again: it halves every this many ms from the first normal answer after it was
   * learned (a new 429 teaches it afresh). From 1 to 2147483647. Default 60_000.
   */
  learnedHalfLifeMs?: number;
  /**
   * How many scopes (by default origins) one pacer keeps state for at most; past it the one used
   * longest ago with nothing in flight and no call waiting on it is let go. From 1 to 10_000_000.
   * Default 10_000.
   */
  maxScopes?: number;
  /**
   * A 429 or 503 `application/problem+json` body is read for its retry time and violated policies up
   * to this many bytes; a longer body is not read further (fetch: the copy read for them is
   * cancelled; undici: the body is passed on unread) and the answer is taken without its problem
   * details. 0 never reads one. From 0 to 16_777_216. Default 65_536.
   */
  problemBodyMaxBytes?: number;
  /**
   * The longest that reading such a body may take, in ms; past it reading stops as for a body too
   * long. From 1 to 2147483647. Default 2_000.
   */
  problemBodyTimeoutMs?: number;
  /** Called before every wait (a pacing wait, a retry wait, a wait for a concurrency slot). Default none. */
  onWait?: (event: WaitEvent) => void;
  /** A monotonic clock in ms, for tests. Default performance.now. */
  now?: () => number;
  /** Uniform in [0, 1), for the jitter; for tests. Default Math.random. */
  random?: () => number;
}

/** Per-call options: `init.pacing` for pacedFetch, `opts.pacing` for the undici interceptor. */
export interface CallPacingOptions {
  /** This call's own maxWaitMs. Default the pacer's. */
  maxWaitMs?: number;
  /** false: never retry this call after a 429 or 503 (it is still paced before it is sent). Default true for the pacer's retryMethods. */
  retry?: boolean;
}

export interface ResolvedPacingOptions {
  readonly maxWaitMs: number;
  readonly jitterMs: number;
  readonly maxRetries: number;
  readonly retryMethods: ReadonlySet<string>;
  readonly retryStatuses: ReadonlySet<number>;
  readonly scope: (url: URL) => string;
  readonly maxHoldMs: number;
  readonly learnedHalfLifeMs: number;
  readonly maxScopes: number;
  readonly problemBodyMaxBytes: number;
  readonly problemBodyTimeoutMs: number;
  readonly onWait: ((event: WaitEvent) => void) | undefined;
  readonly now: () => number;
  readonly random: () => number;
}

const DEFAULTS = {
  maxWaitMs: 60_000,
  jitterMs: 250,
  maxRetries: 2,
  retryMethods: ['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'TRACE'],
  retryStatuses: [429, 503],
  maxHoldMs: 300_000,
  learnedHalfLifeMs: 60_000,
  maxScopes: 10_000,
  problemBodyMaxBytes: 65_536,
  problemBodyTimeoutMs: 2_000,
} as const;

/** The longest delay setTimeout keeps: a longer one fires after 1 ms (with a TimeoutOverflowWarning). */
export const MAX_TIMER_MS = 2_147_483_647;

const KNOWN = [
  'maxWaitMs',
  'jitterMs',
  'maxRetries',
  'retryMethods',
  'retryStatuses',
  'maxHoldMs',
  'learnedHalfLifeMs',
  'maxScopes',
  'problemBodyMaxBytes',
  'problemBodyTimeoutMs',
  'scope',
  'onWait',
  'now',
  'random',
] as const;
const CALL_KNOWN = ['maxWaitMs', 'retry'] as const;

/** Names other clients use for the same thing (undici's retry, got, ky, p-retry), so a port finds ours. */
const ALIASES: Record<string, string> = {
  retries: 'maxRetries',
  limit: 'maxRetries',
  retry: 'maxRetries',
  methods: 'retryMethods',
  statusCodes: 'retryStatuses',
  statuses: 'retryStatuses',
  maxTimeout: 'maxWaitMs',
  maxRetryAfter: 'maxWaitMs',
  maxBodySize: 'problemBodyMaxBytes',
  bodyTimeout: 'problemBodyTimeoutMs',
  timeout: 'maxWaitMs',
  timeoutMs: 'maxWaitMs',
  jitter: 'jitterMs',
};

function distance(a: string, b: string): number {
  const d = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = d[0];
    d[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const next = d[j];
      d[j] = Math.min(d[j] + 1, d[j - 1] + 1, prev + (a[i - 1].toLowerCase() === b[j - 1].toLowerCase() ? 0 : 1));
      prev = next;
    }
  }
  return d[b.length];
}

function rejectUnknown(given: object, known: readonly string[], where: string, aliases: Record<string, string>): void {
  for (const key of Object.keys(given)) {
    if (known.includes(key)) continue;
    const alias = aliases[key];
    const near = known.map((k) => [k, distance(key, k)] as const).sort((a, b) => a[1] - b[1])[0];
    const guess = alias ?? (near && near[1] <= Math.max(2, Math.floor(key.length / 3)) ? near[0] : undefined);
    throw new FloodgateClientError(
      'FG_CLIENT_UNKNOWN_OPTION',
      `Unknown option \`${key}\` in ${where}${guess ? `: did you mean \`${guess}\`?` : '.'} Known options: ${known.join(', ')}.`,
      key,
    );
  }
}

function waitMs(option: string, value: unknown): number {
  if (typeof value !== 'number' || Number.isNaN(value) || value < 0) invalidOption(option, value, 'a number of ms >= 0, or Infinity');
  return value;
}

function fn<T>(option: string, value: unknown): T {
  if (typeof value !== 'function') invalidOption(option, value, 'a function');
  return value as T;
}

/** An option that is a whole number (`integer`) or a number in [min, max], else its default. */
function bounded(o: Record<string, unknown>, option: keyof typeof DEFAULTS & string, min: number, max: number, integer: boolean): number {
  const value = o[option];
  if (value === undefined) return DEFAULTS[option] as number;
  if (typeof value !== 'number' || !(integer ? Number.isInteger(value) : Number.isFinite(value)) || value < min || value > max) {
    invalidOption(option, value, `${integer ? 'a whole number' : 'a number of ms'} from ${min} to ${max}`);
  }
  return value;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Parses the options once; the caller's object is not touched. */
export function resolvePacingOptions(options: PacingOptions = {}): ResolvedPacingOptions {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) invalidOption('options', options, 'an object of pacing options');
  rejectUnknown(options, KNOWN, 'the pacing options', ALIASES);
  const o = options as Record<string, unknown>;
  const maxWait = o.maxWaitMs === undefined ? DEFAULTS.maxWaitMs : waitMs('maxWaitMs', o.maxWaitMs);
  let jitter: number = DEFAULTS.jitterMs;
  if (o.jitterMs !== undefined) {
    if (typeof o.jitterMs !== 'number' || !Number.isFinite(o.jitterMs) || o.jitterMs < 0 || o.jitterMs > 60_000) {
      invalidOption('jitterMs', o.jitterMs, 'a number of ms from 0 to 60000');
    }
    jitter = o.jitterMs;
  }
  let retries: number = DEFAULTS.maxRetries;
  if (o.maxRetries !== undefined) {
    if (!Number.isInteger(o.maxRetries) || (o.maxRetries as number) < 0 || (o.maxRetries as number) > 100) {
      invalidOption('maxRetries', o.maxRetries, 'a whole number from 0 to 100');
    }
    retries = o.maxRetries as number;
  }
  let methods: readonly string[] = DEFAULTS.retryMethods;
  if (o.retryMethods !== undefined) {
    if (!Array.isArray(o.retryMethods) || !o.retryMethods.every((m) => typeof m === 'string' && TOKEN.test(m))) {
      invalidOption('retryMethods', o.retryMethods, "an array of HTTP method names, such as ['GET', 'PUT']");
    }
    methods = (o.retryMethods as string[]).map((m) => m.toUpperCase());
  }
  let statuses: readonly number[] = DEFAULTS.retryStatuses;
  if (o.retryStatuses !== undefined) {
    if (!Array.isArray(o.retryStatuses) || !o.retryStatuses.every((s) => Number.isInteger(s) && s >= 100 && s <= 599)) {
      invalidOption('retryStatuses', o.retryStatuses, 'an array of HTTP status codes from 100 to 599, such as [429, 503]');
    }
    statuses = o.retryStatuses as number[];
  }
  return {
    maxWaitMs: maxWait,
    jitterMs: jitter,
    maxRetries: retries,
    retryMethods: new Set(methods),
    retryStatuses: new Set(statuses),
    maxHoldMs: bounded(o, 'maxHoldMs', 1, MAX_TIMER_MS, false),
    learnedHalfLifeMs: bounded(o, 'learnedHalfLifeMs', 1, MAX_TIMER_MS, false),
    maxScopes: bounded(o, 'maxScopes', 1, 10_000_000, true),
    problemBodyMaxBytes: bounded(o, 'problemBodyMaxBytes', 0, 16_777_216, true),
    problemBodyTimeoutMs: bounded(o, 'problemBodyTimeoutMs', 1, MAX_TIMER_MS, false),
    scope: o.scope === undefined ? (url: URL) => url.origin : fn('scope', o.scope),
    onWait: o.onWait === undefined ? undefined : fn('onWait', o.onWait),
    now: o.now === undefined ? () => performance.now() : fn('now', o.now),
    random: o.random === undefined ? Math.random : fn('random', o.random),
  };
}

/** A call's own options (`pacing` on the request), checked when the call is made: they arrive with it. */
export function resolveCallOptions(call: unknown): CallPacingOptions {
  if (call === undefined) return {};
  if (call === null || typeof call !== 'object' || Array.isArray(call)) invalidOption('pacing', call, 'an object such as { maxWaitMs: 5000 }');
  rejectUnknown(call, CALL_KNOWN, "a call's pacing options", { timeout: 'maxWaitMs', maxRetries: 'retry' });
  const c = call as Record<string, unknown>;
  const out: CallPacingOptions = {};
  if (c.maxWaitMs !== undefined) out.maxWaitMs = waitMs('pacing.maxWaitMs', c.maxWaitMs);
  if (c.retry !== undefined) {
    if (typeof c.retry !== 'boolean') invalidOption('pacing.retry', c.retry, 'true or false');
    out.retry = c.retry;
  }
  return out;
}
