// @floodgate/client: pace outgoing requests on the RateLimit fields and Retry-After a server sends (undici: @floodgate/client/undici).
export { pacedFetch, type FetchLike, type PacedFetch, type PacedRequestInit } from './fetch';
export { Pacer, type ScopeSnapshot, type SettledResponse, type WaitBudget } from './pacer/pacer';
export type { Ticket } from './pacer/scope-state';
export type { PacingOptions, CallPacingOptions, WaitEvent } from './options';
export { FloodgateClientError, RateLimitWaitError, DOCS_CLIENT_URL, type FloodgateClientErrorCode, type WaitReason } from './errors';
export {
  parseRateLimit,
  parseDraft10,
  parseDraft7,
  parseDraft6,
  parseXRateLimit,
  parseRetryAfter,
  parseProblemDetails,
  isProblemJson,
  resetToMs,
  fieldLookup,
  EPOCH_SECONDS_FROM,
  EPOCH_MS_FROM,
  PROBLEM_TYPES,
  type RateLimitInfo,
  type ParseOptions,
  type Dialect,
  type QuotaObservation,
  type QuotaUnit,
  type HeaderSource,
  type FieldLookup,
  type ResetConvention,
  type ProblemInfo,
} from './parse';
