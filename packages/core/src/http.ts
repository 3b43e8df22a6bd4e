// @floodgate/core/http: the entry for adapter authors (the framework-free request pipeline); app authors use '@floodgate/core'.
export { createHttpLimiter, finishOnResponse, settleOnFinish, UNMATCHED_SCOPE } from './http/http-limiter';
export { isThenable } from './base/maybe-promise';
export type { HttpLimiter, HttpResult, HttpLimiterContext } from './http/http-limiter';
export { DEFAULT_LIMIT, mergeRouteOptions } from './http/resolve-http-options';
export type { HttpRateLimitOptions, RateLimitEvent, RequestValue, HttpLimitOptions } from './http/resolve-http-options';
export type { OverrideTarget } from './http/types';
export type { OverrideLimits, OverrideOptions, OverrideRecord } from './engine/overrides';
export type { RequestFacts } from './identity';
export type { Decision } from './model/decision';
export type { Reservation, SettleResult } from './model/settle';
export type { UsageAnswer, UsageRoute, RouteUsage } from './http/types';
export type { Health, HealthOptions } from './observe/health';
export { invalidOption, FloodgateError, withoutStack } from './base/errors';
export { warnOnce } from './base/warnings';
export { stepAside, warnRouteOwnLimiter, warnRouteNotLimited } from './http/route-warnings';
export type { LimiterMark } from './http/route-warnings';
export type { WarningCode } from './base/warnings';
// For an adapter whose framework has no trust-proxy setting of its own: the trusted proxies as IPs and CIDR ranges, parsed as allowList is.
export { createAllowList } from './identity/allow-list';
// With it, the client behind the trusted proxies in X-Forwarded-For (one rule for every adapter that reads the header itself).
export { forwardedClient } from './identity/forwarded';
export { trustProxyOf } from './identity/trust-proxy';
export type { AllowList } from './identity/allow-list';
export { formatHeaders, retryAfterSeconds } from './headers/format-headers';
export type { HeaderPair } from './headers/format-headers';
export { problemDetails, PROBLEM_CONTENT_TYPE, QUOTA_EXCEEDED_TYPE } from './headers/problem-details';
// Shaping (route option `shape`): the signal a Node adapter passes as facts.signal on a shaped route, the options and their default.
export { signalOnClose } from './http/shape';
export { DEFAULT_MAX_WAITING } from './http/shape-options';
export type { ShapeOptions } from './http/shape-options';
// For an adapter with options of its own: the one unknown-option check (FG_UNKNOWN_OPTION, with a did-you-mean).
export { checkOptionNames } from './base/validate';
export { overrideFace, type OverrideFace } from './http/overrides';
