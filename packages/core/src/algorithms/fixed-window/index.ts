// fixed-window's descriptor: what the registry, options, stores and hot keys need to know of it.
import { LUA_CHUNKS } from '../../lua/scripts.generated';
import { defineAlgorithm } from '../types';
import { fixedWindow } from './fixed-window';

export const fixedWindowAlgorithm = defineAlgorithm({
  name: 'fixed-window',
  keySuffix: 'fw',
  family: 'window',
  twin: fixedWindow,
  // After an admitted consume, resetMs is the time to the end of the window it was charged to.
  leaseEdgeMs: (admitted) => admitted.resetMs,
  lua: LUA_CHUNKS['fixed-window'],
});
