// @floodgate/core/internal: core's machinery for Floodgate's own tools (benchmarks, a second Redis client); no semver promise.
export { SCRIPTS, scriptFor, encodeCall, encodeGroups, encodeGroupsOf, evalArgs, parseReply, runScript } from './stores/redis/protocol';
export type { Script, ScriptName, ScriptCall, EvalArgs, SendCommand } from './stores/redis/protocol';
export { ALGORITHM } from './algorithms/registry';
export type { RegisteredAlgorithm } from './algorithms/registry';
export type { AlgorithmDescriptor, AlgorithmFamily, FamilyLimit, RateLimit, Twin, TwinCheck, TwinLimit, WindowLimit } from './algorithms/types';
export { resolveLimiterOptions, resolveLimits } from './engine/options';
export type { ResolvedLimit, ResolvedLimiterOptions } from './engine/options';
export { resolveHttpOptions } from './http/resolve-http-options';
export { bucketClaimsHeld, CLAIMS_MAX } from './http/bucket-claims';
export type { ResolvedHttpOptions } from './http/resolve-http-options';
export type { ResolvedIdentityOptions } from './identity';
export { TWINS, evaluateTwins } from './algorithms/evaluate';
export { toDecision, bareDecision } from './model/decision';
export { BlockCache } from './engine/block-cache';
export { withHotKeys } from './hot-keys/hot-key-store';
export { runtimeFor } from './failure/store-runtime';
