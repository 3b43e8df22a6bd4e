// Runs the fastify-api example: REDIS_URL, else a redis-server of its own (if on PATH), else memory; PORT (default 3000).
import { Redis } from 'ioredis';
import { closeOnSignals, exampleRedis, redisTimeoutFromEnv } from '../../shared/src/local-redis';
import { createApp } from './app';

const port = Number(process.env.PORT ?? 3000);

async function main(): Promise<void> {
  // Not resending unanswered commands after a reconnect keeps a request from being counted twice.
  const redis = await exampleRedis(
    (url) => new Redis(url, { autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 1 }),
    { memoryNote: 'Counts are per process and lost on restart.' },
  );
  const app = await createApp({ redis: redis.client, redisTimeoutMs: redisTimeoutFromEnv() });
  app.addHook('onClose', () => redis.close());
  try {
    await app.listen({ port, host: '127.0.0.1' });
  } catch (error) {
    await app.close();
    throw error;
  }
  const address = app.server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : port}`;
  console.log(`fastify-api on ${url}`);
  console.log(`limits: ${redis.description}`);
  console.log(`try: curl -i '${url}/search?q=floodgate'`);
  closeOnSignals(() => app.close());
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
