// sliding-window-counter's descriptor: what the registry, options, stores and hot keys need to know of it.
import { LUA_CHUNKS } from '../../lua/scripts.generated';
import { defineAlgorithm } from '../types';
import { slidingWindowCounter } from './sliding-window-counter';

export const slidingWindowCounterAlgorithm = defineAlgorithm({
  name: 'sliding-window-counter',
  keySuffix: 'swc',
  family: 'window',
  twin: slidingWindowCounter,
  // After an admitted consume, resetMs is the end of the NEXT window (when the charged units stop
  // counting); the window they were charged to ends one period earlier.
  leaseEdgeMs: (admitted, limit) => admitted.resetMs - limit.windowMs,
  lua: LUA_CHUNKS['sliding-window-counter'],
});
