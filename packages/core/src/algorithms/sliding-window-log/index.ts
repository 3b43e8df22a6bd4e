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
  lua: LUA_CHUNKS['sliding-window-log'],
});
