// sliding-window-counter's descriptor: what the registry, options, stores and hot keys need to know of it.
import { LUA_CHUNKS } from '../../lua/scripts.generated';
import { defineAlgorithm } from '../types';
import { slidingWindowCounter } from './sliding-window-counter';

export const slidingWindowCounterAlgorithm = defineAlgorithm({
  name: 'sliding-window-counter',
  keySuffix: 'swc',
  family: 'window',
  twin: slidingWindowCounter,
  // The window the units were charged to ends at the next multiple of windowMs on the store's clock
  // (windows are aligned: w = floor(now / windowMs), in the Lua and the twin). Not read off resetMs:
  // an admission that leaves nothing resets when the next unit is back (docs/headers.md).
  leaseEdgeMs: (_admitted, limit, at) => limit.windowMs - (at % limit.windowMs),
  lua: LUA_CHUNKS['sliding-window-counter'],
});
