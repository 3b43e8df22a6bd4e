// Errors Floodgate throws: a stable code, the option, the bad value and the valid range, and a docs anchor.

/**
 * Where each code has its own anchor: the error reference ships inside @floodgate/core, so this path
 * exists in every app that installed it (and is docs/errors.md in the repository). No web address yet.
 */
export const DOCS_ERRORS_URL = 'node_modules/@floodgate/core/docs/errors.md';

export type FloodgateErrorCode =
  | 'FG_INVALID_OPTION'
  | 'FG_UNKNOWN_OPTION'
  | 'FG_BUCKET_CONFLICT'
  | 'FG_INVALID_COST'
  | 'FG_INVALID_AT'
  | 'FG_STORE_TIMEOUT'
  | 'FG_STORE_UNAVAILABLE'
  | 'FG_STORE_OVERLOADED'
  | 'FG_STORE_REPLY'
  | 'FG_STORE_SCRIPT'
  | 'FG_STORE_NOPERM'
  | 'FG_STORE_OOM'
  | 'FG_STORE_READONLY'
  | 'FG_LIMIT_FUNCTION'
  | 'FG_OVERRIDES_OFF';

/** Each code's " [CODE] See <docs>#anchor" ending, made once per code. */
const endings = new Map<FloodgateErrorCode, string>();
function ending(code: FloodgateErrorCode): string {
  let text = endings.get(code);
  if (text === undefined) endings.set(code, (text = ` [${code}] See ${DOCS_ERRORS_URL}#${code.toLowerCase().replace(/_/g, '-')}`));
  return text;
}

/**
 * Makes an error without capturing a stack trace (its `stack` is its first line only). For the
 * store errors the failure path makes by the hundreds a second under a flood (a timeout per call,
 * a refusal per call past `maxInFlight`), in timer callbacks where a stack would name only Node's
 * timers: capturing one is most of what such an error costs, at the moment the process is busiest.
 * Adapters use it for an exception their framework wants for a denial (@floodgate/nestjs's
 * RateLimitException): a 429 is an answer, not a fault, and its stack would name only the framework.
 */
export function withoutStack<T>(make: () => T): T {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return make();
  } finally {
    Error.stackTraceLimit = limit;
  }
}

export class FloodgateError extends Error {
  readonly code: FloodgateErrorCode;
  readonly option?: string;
  constructor(code: FloodgateErrorCode, message: string, option?: string) {
    super(message + ending(code));
    this.name = 'FloodgateError';
    this.code = code;
    this.option = option;
  }
}

/** Strings longer than this are shown cut, with their length: a value from request or account data can be any size. */
const SHOWN_STRING_LENGTH = 200;

function show(value: unknown): string {
  if (typeof value === 'string') {
    return value.length > SHOWN_STRING_LENGTH ? `${JSON.stringify(value.slice(0, 64))}... (${value.length} characters)` : JSON.stringify(value);
  }
  if (typeof value === 'function') return 'a function';
  // JSON would print NaN and Infinity as null.
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  // A class instance (a Redis client, a Store) is named, not dumped: its JSON can run to kilobytes.
  const proto = value !== null && typeof value === 'object' ? Object.getPrototypeOf(value) : null;
  // ioredis has evalsha, node-redis sendCommand (its class is named 'Class': the name says nothing).
  const client = value as { evalsha?: unknown; sendCommand?: unknown };
  if (proto !== null && (typeof client.evalsha === 'function' || typeof client.sendCommand === 'function')) return 'a Redis client';
  if (proto !== null && proto !== Object.prototype && proto !== Array.prototype) {
    return `an instance of ${(value as object).constructor?.name || 'a class'}`;
  }
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > 200 ? `${text.slice(0, 200)}...` : text;
}

/** Throws FG_INVALID_OPTION naming the option, the value given and what is valid. */
export function invalidOption(option: string, value: unknown, valid: string): never {
  throw new FloodgateError(
    'FG_INVALID_OPTION',
    `Invalid option \`${option}\`: got ${show(value)}; expected ${valid}.`,
    option,
  );
}
