// gcra's descriptor: what the registry, options, stores and hot keys need to know of it.
import { LUA_CHUNKS } from '../../lua/scripts.generated';
import { defineAlgorithm } from '../types';
import { gcra } from './gcra';

export const gcraAlgorithm = defineAlgorithm({
  name: 'gcra',
  keySuffix: 'gcra',
  family: 'rate',
  twin: gcra,
  // The theoretical arrival time moves continuously: no window edge.
  leaseEdgeMs: undefined,
  lua: LUA_CHUNKS.gcra,
});
