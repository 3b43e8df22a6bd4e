// @nestjs/throttler's option and decorator names, answered with the Floodgate name they map to before core parses anything.
import { FloodgateError } from '@floodgate/core/http';

/** @nestjs/throttler's option names (module and throttler entries) and what Floodgate calls them. */
const THROTTLER_NAMES: Readonly<Record<string, string>> = {
  ttl: '`windowMs` (milliseconds, or a duration such as \'1m\')',
  throttlers: '`limits: [{ name, limit, windowMs }]` (or `limit` and `windowMs` for one limit)',
  storage: '`store` (new RedisStore({ client }) from @floodgate/core)',
  getTracker: '`key` (a function of the request; by default the API key, else the client IP)',
  generateKey: '`key` (buckets are already per route and caller; `group` shares one between routes)',
  skipIf: '`skip` (a function of the request; or @SkipRateLimit() on a handler or controller)',
  ignoreUserAgents: '`skip` (a function of the request: never a header alone, which any client can write)',
  errorMessage: '`handler` (returns the 429 body)',
  blockDuration: '`lockout`',
};

function unknown(name: string, where: string, meant: string): never {
  throw new FloodgateError('FG_UNKNOWN_OPTION', `Unknown option \`${name}\` in ${where}: @nestjs/throttler's \`${name}\` is Floodgate's ${meant}; did you mean it?`, name);
}

/**
 * Throws FG_UNKNOWN_OPTION for @nestjs/throttler's names in `options` (and in its `limits` entries):
 * core would reject them too, but could not say what they are called here. Everything else is
 * left to core, which parses the options once, down one path.
 */
export function rejectThrottlerNames(options: unknown, where: string): void {
  if (Array.isArray(options)) {
    throw new FloodgateError(
      'FG_INVALID_OPTION',
      `Invalid options for ${where}: got a list, as @nestjs/throttler's forRoot([{ ttl, limit }]) takes; Floodgate takes one options object: { limit, windowMs } or { limits: [{ name, limit, windowMs }] }.`,
      'options',
    );
  }
  if (options === null || typeof options !== 'object') return; // core names the bad value
  for (const [name, value] of Object.entries(options)) {
    if (Object.prototype.hasOwnProperty.call(THROTTLER_NAMES, name)) unknown(name, where, THROTTLER_NAMES[name]);
    // @Throttle({ default: { limit, ttl } }): a throttler's name as the key.
    if (value !== null && typeof value === 'object' && !Array.isArray(value) && 'ttl' in value) {
      throw new FloodgateError(
        'FG_UNKNOWN_OPTION',
        `Unknown option \`${name}\` in ${where}: @nestjs/throttler's named throttlers ({ ${name}: { limit, ttl } }) are Floodgate's \`limits: [{ name: '${name}', limit, windowMs }]\`; did you mean \`limits\`?`,
        name,
      );
    }
  }
  const limits = (options as { limits?: unknown }).limits;
  if (Array.isArray(limits)) limits.forEach((entry, i) => entry && typeof entry === 'object' && 'ttl' in entry && unknown('ttl', `${where} limits[${i}]`, THROTTLER_NAMES.ttl));
}

/** Why a throttler decorator throws: its name and ours. */
function renamed(theirs: string, ours: string): never {
  throw new FloodgateError('FG_UNKNOWN_OPTION', `@${theirs}() is @nestjs/throttler's decorator; did you mean @${ours}() from @floodgate/nestjs?`, theirs);
}

/**
 * @nestjs/throttler's decorator, kept so that a migration that only swapped the import fails at
 * class definition, naming ours: use `@RateLimit({ limit, windowMs })`.
 * @deprecated Not Floodgate's: use `@RateLimit()`.
 */
export function Throttle(..._args: unknown[]): never {
  return renamed('Throttle', 'RateLimit');
}

/**
 * @nestjs/throttler's decorator, kept so that a migration that only swapped the import fails at
 * class definition, naming ours: use `@SkipRateLimit()`.
 * @deprecated Not Floodgate's: use `@SkipRateLimit()`.
 */
export function SkipThrottle(..._args: unknown[]): never {
  return renamed('SkipThrottle', 'SkipRateLimit');
}
