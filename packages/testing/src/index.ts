// @floodgate/testing: real redis-server processes and a local Redis Cluster for Floodgate's tests.
export { startRedis, type RedisServer, type StartRedisOptions } from './redis-server';
export {
  startRedisCluster,
  type RedisClusterHandle,
  type StartRedisClusterOptions,
} from './redis-cluster';
export { keySlot, crc16, SLOT_COUNT } from './key-slot';
export { parseCommandStats, sumCommandStats } from './command-stats';
export { pollUntil, type PollOptions } from './poll';
