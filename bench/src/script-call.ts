// The exact EVALSHA that Floodgate's RedisStore sends for one limit, for redis-benchmark and raw-client runs.
import type { AlgorithmName } from '@floodgate/core';
import { admitLimits } from './admit';
// Core's protocol module and option parser, through its internal entry: the same encoding RedisStore uses.
import { encodeCall, encodeGroups, evalArgs, resolveLimiterOptions, type EvalArgs } from '@floodgate/core/internal';

export interface ScriptCall {
  source: string;
  sha: string;
  /** EVALSHA's arguments: sha, numkeys, key, then ARGV, as RedisStore builds them (consume, cost 1, Redis TIME). */
  evalsha: EvalArgs;
}

export function scriptCall(algorithm: AlgorithmName, limit: number, windowMs: number, key: string): ScriptCall {
  const { store } = resolveLimiterOptions({ algorithm, ...admitLimits(algorithm, limit, windowMs) }).limits[0];
  const call = encodeCall([{ keys: [key], limits: [store], cost: 1, mode: 'consume' }]);
  return { source: call.script.source, sha: call.script.sha, evalsha: evalArgs(call, call.script.sha) };
}

/** The EVALSHA RedisStore sends for `keys.length` subjects of one limiter decided in one call (coalesced in one turn): one request each. */
export function groupsCall(algorithm: AlgorithmName, limit: number, windowMs: number, keys: readonly string[]): ScriptCall {
  const { store } = resolveLimiterOptions({ algorithm, ...admitLimits(algorithm, limit, windowMs) }).limits[0];
  const limits = [store];
  const call = encodeGroups(keys.map((key) => [{ keys: [key], limits, cost: 1, mode: 'consume' as const }]));
  return { source: call.script.source, sha: call.script.sha, evalsha: evalArgs(call, call.script.sha) };
}
