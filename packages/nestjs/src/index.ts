// @floodgate/nestjs: FloodgateModule, FloodgateGuard, @RateLimit() and @SkipRateLimit() for Nest 11 on Express and Fastify. The core decides.
import type { Decision, Reservation } from '@floodgate/core/http';

export { FloodgateModule, FLOODGATE_OPTIONS, type FloodgateModuleAsyncOptions } from './floodgate-module';
export { FloodgateService, type FloodgateModuleOptions } from './floodgate-service';
export { FloodgateGuard } from './floodgate-guard';
export { RateLimit, SkipRateLimit, RATE_LIMIT_OPTIONS, SKIP_RATE_LIMIT, type RateLimitOptions } from './decorators';
export { RateLimitException, ProblemBody } from './rate-limit-exception';
export { Throttle, SkipThrottle } from './peer-names';
export type { Decision, Health, RateLimitEvent, Reservation, SettleResult } from '@floodgate/core';

/** What FloodgateGuard puts on the platform request (Express `req`, Fastify `request`). */
export interface RateLimitedRequest {
  /** Floodgate's decision for this request; unset when no limiter ran (or for a 401 unknown API key). */
  rateLimit?: Decision;
  /** With the `settle` option: this request's reservation; `req.floodgate.settle(actual)` charges the actual cost (docs/quotas.md). */
  floodgate?: Reservation;
}
