// Runs the graphql-api example on node:http: REDIS_URL, else a redis-server of its own (if on PATH), else memory; PORT (default 4000).
import { Redis } from 'ioredis';
import { exampleRedis, serveExample, redisTimeoutFromEnv } from '../../shared/src/local-redis';
import { createApp } from './app';

async function main(): Promise<void> {
  // Not resending unanswered commands after a reconnect keeps an operation from being counted twice.
  const redis = await exampleRedis((url) => new Redis(url, { autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 1 }), {
    memoryNote: 'Counts are per process and lost on restart.',
  });
  await serveExample('graphql-api', createApp({ redis: redis.client, redisTimeoutMs: redisTimeoutFromEnv() }), {
    port: Number(process.env.PORT ?? 4000),
    redis,
    tryLine: (url) => `curl -s ${url}/graphql -H 'content-type: application/json' -d '{"query":"{ products(first: 10) { name } }"}'`,
  });
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
