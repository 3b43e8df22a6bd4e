// @RateLimit() and @SkipRateLimit(): per-handler and per-controller options, read once per route by FloodgateService.
import { SetMetadata } from '@nestjs/common';
import type { HttpRateLimitOptions } from '@floodgate/core/http';
import { rejectThrottlerNames } from './peer-names';

/**
 * Everything `createLimiter` and identity take (limit, windowMs, limits, store, prefix, failMode,
 * apiKeyHeaders, ...) plus `cost`, `key`, `group`, `headers`, `retryAfterJitterMs`, `shadow`,
 * `handler` and the hooks; functions get the platform's request (Express `req` or Fastify
 * `request`). `respondDirectly` left unset here: Floodgate's 429 goes through Nest's exception
 * filters wherever the app has one; on the Express platform, where none would see it, it is
 * written straight to Node (the same status, headers and body). `false`: always through Nest's
 * reply path. See docs/adapters.md for every option and its default.
 */
export type RateLimitOptions<Req = any> = HttpRateLimitOptions<Req>;

/** Metadata keys, on the handler function or the controller class. */
export const RATE_LIMIT_OPTIONS = 'floodgate:rate-limit';
export const SKIP_RATE_LIMIT = 'floodgate:skip-rate-limit';

/**
 * Options for one handler or every handler of a controller, merged over FloodgateModule's (a
 * handler's over its controller's). The bucket stays per route (`GET /users/:id`) unless `group`
 * is set. Names are checked here, at class definition; values when the app initialises.
 * `@RateLimit()` with no options limits with the module's options (it undoes a controller's
 * `@SkipRateLimit()` for this handler).
 */
export function RateLimit<Req = any>(options: RateLimitOptions<Req> = {}): MethodDecorator & ClassDecorator {
  rejectThrottlerNames(options, '@RateLimit()');
  return SetMetadata(RATE_LIMIT_OPTIONS, options);
}

/** Exempts one handler, or every handler of a controller: not counted, not limited, no headers. */
export function SkipRateLimit(): MethodDecorator & ClassDecorator {
  return SetMetadata(SKIP_RATE_LIMIT, true);
}
