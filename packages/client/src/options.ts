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
   * told the same moment do not come back in one wave. Only ever added: a wait is never shorter than
   * the server asked. Default 250.
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
} as const;

const KNOWN = ['maxWaitMs', 'jitterMs', 'maxRetries', 'retryMethods', 'retryStatuses', 'scope', 'onWait', 'now', 'random'] as const;
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
