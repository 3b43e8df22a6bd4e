// Runs the nestjs-api example: PLATFORM express (default) or fastify; REDIS_URL, else a redis-server of its own (if on PATH), else memory; PORT (default 3000).
import { Redis } from 'ioredis';
import { closeOnSignals, exampleRedis, redisTimeoutFromEnv } from '../../shared/src/local-redis';
import { createApp, type Platform } from './create-app';

const port = Number(process.env.PORT ?? 3000);
const platform = (process.env.PLATFORM ?? 'express') as Platform;

async function main(): Promise<void> {
  if (platform !== 'express' && platform !== 'fastify') throw new Error(`PLATFORM must be express or fastify, got ${JSON.stringify(platform)}`);
  // Not resending unanswered commands after a reconnect keeps a request from being counted twice.
  const redis = await exampleRedis(
    (url) => new Redis(url, { autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 1 }),
    { memoryNote: 'Counts are per process and lost on restart.' },
  );
  const app = await createApp(platform, { redis: redis.client, redisTimeoutMs: redisTimeoutFromEnv() });
  try {
    await app.listen(port, '127.0.0.1');
  } catch (error) {
    await app.close();
    await redis.close();
    throw error;
  }
  const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  console.log(`nestjs-api on ${url}`);
  console.log(`platform: ${platform}; limits: ${redis.description}`);
  console.log(`try: curl -i -H 'x-api-key: demo' ${url}/widgets`);
  closeOnSignals(async () => {
    await app.close();
    await redis.close();
  });
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
