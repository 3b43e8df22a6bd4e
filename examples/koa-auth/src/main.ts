// Runs the koa-auth example: REDIS_URL, else a redis-server of its own (if on PATH), else memory; PORT (default 3000).
import { Redis } from 'ioredis';
import { exampleRedis, serveExample, redisTimeoutFromEnv } from '../../shared/src/local-redis';
import { createApp } from './app';

async function main(): Promise<void> {
  // Not resending unanswered commands after a reconnect keeps a request from being counted twice.
  const redis = await exampleRedis(
    (url) => new Redis(url, { autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 1 }),
    { memoryNote: 'Counts and lock-outs are per process and lost on restart.' },
  );
  await serveExample('koa-auth', createApp({ redis: redis.client, redisTimeoutMs: redisTimeoutFromEnv() }).callback(), {
    port: Number(process.env.PORT ?? 3000),
    redis,
    tryLine: (url) => `curl -i -H 'content-type: application/json' -d '{"username":"demo","password":"wrong"}' ${url}/login`,
  });
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
