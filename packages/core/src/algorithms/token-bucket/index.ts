// token-bucket's descriptor: what the registry, options, stores and hot keys need to know of it.
import { LUA_CHUNKS } from '../../lua/scripts.generated';
import { defineAlgorithm } from '../types';
import { tokenBucket } from './token-bucket';

export const tokenBucketAlgorithm = defineAlgorithm({
  name: 'token-bucket',
  keySuffix: 'tb',
  family: 'rate',
  twin: tokenBucket,
  // Tokens refill continuously: no window edge.
  leaseEdgeMs: undefined,
  lua: LUA_CHUNKS['token-bucket'],
});
