// The exact EVALSHA that Floodgate's RedisStore sends for one limit, for redis-benchmark and raw-client runs.
import { createHash } from 'node:crypto';
import { resolveLimiterOptions, type AlgorithmName } from '@floodgate/core';
// Internal to core (not public API): the bench needs the script text and the algorithm ids of the protocol.
import { ALGORITHM_ID } from '../../packages/core/src/algorithms/types';
import { LUA_SCRIPTS } from '../../packages/core/src/lua/scripts.generated';

export interface ScriptCall {
  source: string;
  sha: string;
  /** numkeys, key, then ARGV, as RedisStore builds them (consume, cost 1, Redis TIME). */
  args: [number, string, ...(string | number)[]];
}

export function scriptCall(algorithm: AlgorithmName, limit: number, windowMs: number, key: string): ScriptCall {
  const source = LUA_SCRIPTS[algorithm];
  const { store } = resolveLimiterOptions({ algorithm, limit, windowMs }).limits[0];
  return {
    source,
    sha: createHash('sha1').update(source).digest('hex'),
    args: [1, key, 'c', 1, '', ALGORITHM_ID[algorithm], store.capacity, store.period],
  };
}
