// Runs the socket-chat example: REDIS_URL, else a redis-server of its own (if on PATH), else memory; PORT (default 3000).
import { Redis } from 'ioredis';
import { closeOnSignals, exampleRedis, redisTimeoutFromEnv } from '../../shared/src/local-redis';
import { createChat } from './app';

async function main(): Promise<void> {
  // Not resending unanswered commands after a reconnect keeps a message from being counted twice.
  const redis = await exampleRedis((url) => new Redis(url, { autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 1 }), {
    memoryNote: 'Counts are per process and lost on restart.',
  });
  const chat = createChat({ redis: redis.client, redisTimeoutMs: redisTimeoutFromEnv() });
  const server = chat.server;
  await new Promise<void>((resolve) => server.listen(Number(process.env.PORT ?? 3000), '127.0.0.1', resolve));
  const address = server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  console.log(`socket-chat on ${url}`);
  console.log(`limits: ${redis.description}`);
  console.log(`try: npx wscat -c ${url.replace('http', 'ws')}/ws   (the 21st message in 10 s is answered {"type":"rate-limited",...})`);
  closeOnSignals(async () => {
    await chat.close();
    await redis.close();
  });
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
