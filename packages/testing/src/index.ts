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
export {
  HEALTHY_DEADLINE_MS,
  MIN_SAMPLES,
  enoughPerRoute,
  failOnUnhandledErrors,
  killAndRestart,
  latencyStats,
  measurementLog,
  pauseAndResume,
  sleep,
  steadyLoad,
  waitFor,
  whilePaused,
  type FaultWatch,
  type Fired,
  type KillTimeline,
  type PauseTimeline,
  type SteadyLoad,
} from './faults';
export { CountingStore } from './counting-store';
