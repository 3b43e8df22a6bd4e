// @floodgate/testing: real redis-server processes (TLS, passwords, ACL users), a local Redis Cluster, a Sentinel topology and the fault choreography for Floodgate's tests (adapter suites: @floodgate/testing/adapter-suites).
export { startRedis, type RedisServer, type StartRedisOptions, type AclUser } from './redis-server';
export { startRedisSentinel, type RedisSentinelHandle, type StartRedisSentinelOptions, type FailoverTimeline } from './redis-sentinel';
export { tlsMaterial, type TlsMaterial } from './tls-material';
export { respCommand, type RespReply } from './resp-command';
export {
  startRedisCluster,
  type RedisClusterHandle,
  type StartRedisClusterOptions,
} from './redis-cluster';
export { keySlot, crc16, SLOT_COUNT } from './key-slot';
export { parseCommandStats, sumCommandStats } from './command-stats';
export { pollUntil, type PollOptions } from './poll';
export * from './faults';
export { CountingStore } from './counting-store';
export { runCommand, isProcessAlive, freshMachineEnv, startExample, type RunningCommand, type StartedExample } from './child-process';
export { prng, type Prng } from './prng';
export { raceMessages, forkRaceChildren, stopRaceChildren, raceRound, inFlightTogetherMs, allInFlightTogether, type RaceMessage, type RaceTimes, type ForkRaceOptions, type Pausable } from './race';
export { leasesHeld } from './leases';
export { startRedisRest, type RedisRestServer } from './redis-rest';
export { startDelayProxy, type DelayProxy, type DelaySchedule, type StartDelayProxyOptions } from './delay-proxy';
