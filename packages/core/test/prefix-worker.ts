// Child process of prefix-shared-redis.test.ts: one app's instance (its own process and connection) whose limiter leaves `prefix` at its default, reporting the warnings it wrote.
import { Redis } from 'ioredis';
import { createLimiter, RedisStore } from '../src';

export interface PrefixWorkerSetup {
  port: number;
  limit: number;
  announceMs: number;
}

const setup = JSON.parse(process.argv[2]) as PrefixWorkerSetup;
const client = new Redis({ host: '127.0.0.1', port: setup.port, autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 1 });
client.on('error', () => undefined);
const warnings: string[] = [];
// No prefix: what an app that sets none gets ('fg').
const limiter = createLimiter({
  store: new RedisStore({ client, announceMs: setup.announceMs }),
  limit: setup.limit,
  windowMs: '1m',
  logger: { warn: (m) => void warnings.push(m), error() {} },
});

process.on('message', () => process.send!({ warnings, instances: limiter.health().fleets?.[0]?.instances }));
// The test process went away: never outlive it.
process.on('disconnect', () => process.exit(0));
process.send!({ ready: true });
