// concurrency's descriptor: requests in flight per subject, held as leases that expire (docs/concurrency.md).
import { LUA_CHUNKS } from '../../lua/scripts.generated';
import { defineAlgorithm } from '../types';
import { concurrency } from './concurrency';

export const concurrencyAlgorithm = defineAlgorithm({
  name: 'concurrency',
  keySuffix: 'cc',
  family: 'lease',
  twin: concurrency,
  // A lease has no window edge: hot-key mode does not apply to it.
  leaseEdgeMs: undefined,
  lua: LUA_CHUNKS.concurrency,
});
