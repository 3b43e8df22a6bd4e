// Errors @floodgate/client throws: a stable code, the option or the wait that failed, and a docs anchor.

/**
 * The client is its own package with no dependency on @floodgate/core (a client runs where no server
 * does, and should not install a Redis store to pace a fetch), so it has its own error class, shaped
 * as core's FloodgateError is: a code, the option, the value, the valid range, an anchor.
 */
export const DOCS_CLIENT_URL = 'node_modules/@floodgate/client/docs/client.md';

export type FloodgateClientErrorCode =
  | 'FG_CLIENT_INVALID_OPTION'
  | 'FG_CLIENT_UNKNOWN_OPTION'
  | 'FG_CLIENT_WAIT_EXCEEDS_LIMIT';

export class FloodgateClientError extends Error {
  readonly code: FloodgateClientErrorCode;
  /** The option at fault, for option errors. */
  readonly option?: string;
  constructor(code: FloodgateClientErrorCode, message: string, option?: string) {
    super(`${message} [${code}] See ${DOCS_CLIENT_URL}#${code.toLowerCase().replace(/_/g, '-')}`);
    this.name = 'FloodgateClientError';
    this.code = code;
    this.option = option;
  }
}

/** Why a request would have to wait. */
export type WaitReason = 'quota' | 'retry-after' | 'concurrency';

/**
 * A request would have to wait longer than the caller allows (`maxWaitMs`, summed over the call's
 * waits), so it fails now instead of waiting: nothing was sent for this wait.
 */
export class RateLimitWaitError extends FloodgateClientError {
  /** How long the request would have had to wait, in ms (Infinity: until a request in flight ends, with no bound known). */
  readonly waitMs: number;
  /** The time the caller had left to wait, in ms. */
  readonly budgetMs: number;
  /** The scope (by default the origin) whose state asked for the wait. */
  readonly scope: string;
  readonly reason: WaitReason;
  /** The policy that ran out, when the wait comes from quota fields. */
  readonly policy?: string;
  /** The status of the response that asked for the wait (429 or 503), when a retry would have waited. */
  readonly status?: number;
  constructor(fields: { waitMs: number; budgetMs: number; scope: string; reason: WaitReason; policy?: string; status?: number }) {
    const wait = Number.isFinite(fields.waitMs) ? `${Math.ceil(fields.waitMs)} ms` : 'until a request in flight ends';
    const why =
      fields.reason === 'retry-after'
        ? `the server answered ${fields.status ?? 429} with Retry-After`
        : fields.reason === 'concurrency'
          ? 'the concurrency limit the server advertises is reached'
          : `the quota${fields.policy ? ` of policy ${JSON.stringify(fields.policy)}` : ''} is used up`;
    super(
      'FG_CLIENT_WAIT_EXCEEDS_LIMIT',
      `A request to ${fields.scope} would wait ${wait} (${why}), more than the ${Math.max(0, Math.floor(fields.budgetMs))} ms it may wait (maxWaitMs).`,
    );
    this.name = 'RateLimitWaitError';
    this.waitMs = fields.waitMs;
    this.budgetMs = fields.budgetMs;
    this.scope = fields.scope;
    this.reason = fields.reason;
    this.policy = fields.policy;
    this.status = fields.status;
  }
}

export function show(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  try {
    const text = JSON.stringify(value) ?? String(value);
    return text.length > 200 ? `${text.slice(0, 200)}...` : text;
  } catch {
    return String(value);
  }
}

/** Throws FG_CLIENT_INVALID_OPTION naming the option, the value given and what is valid. */
export function invalidOption(option: string, value: unknown, valid: string): never {
  throw new FloodgateClientError('FG_CLIENT_INVALID_OPTION', `Invalid option \`${option}\`: got ${show(value)}; expected ${valid}.`, option);
}
