// sliding-window-log's descriptor: what the registry, options, stores and hot keys need to know of it.
import { LUA_CHUNKS } from '../../lua/scripts.generated';
import { defineAlgorithm } from '../types';
import { slidingWindowLog } from './sliding-window-log';

export const slidingWindowLogAlgorithm = defineAlgorithm({
  name: 'sliding-window-log',
  keySuffix: 'swl',
  family: 'window',
  twin: slidingWindowLog,
  // Each unit leaves the log on its own, windowMs after it was charged: no edge to stop a lease at.
  leaseEdgeMs: undefined,
  // One ZSET member per unit: an admitted request of cost c writes c members in one script. 10,000
  // bounds that to about 20 ms of Redis time and 1 MB per subject (docs/algorithms.md); a larger
  // limit belongs to sliding-window-counter, whose state does not grow with it.
  maxLimit: 10_000,
  lua: LUA_CHUNKS['sliding-window-log'],
});
