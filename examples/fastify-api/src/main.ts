// Runs the fastify-api example: REDIS_URL (default redis://127.0.0.1:6379) and PORT (default 3000).
import { Redis } from 'ioredis';
import { createApp } from './app';

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const port = Number(process.env.PORT ?? 3000);

async function main(): Promise<void> {
  // Not resending unanswered commands after a reconnect keeps a request from being counted twice.
  const redis = new Redis(redisUrl, { autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 1 });
  redis.on('error', (error: Error) => console.error(`redis: ${error.message}`));
  const app = await createApp({ redis });
  app.addHook('onClose', async () => void (await redis.quit()));
  await app.listen({ port, host: '127.0.0.1' });
  console.log(`fastify-api on http://127.0.0.1:${port} (Redis ${redisUrl})`);
  console.log(`try: curl -i 'http://127.0.0.1:${port}/search?q=floodgate'`);
  const shutdown = () => void app.close();
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
