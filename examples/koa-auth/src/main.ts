// Runs the koa-auth example: REDIS_URL (default redis://127.0.0.1:6379) and PORT (default 3000).
import { Redis } from 'ioredis';
import { createApp } from './app';

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const port = Number(process.env.PORT ?? 3000);

// Not resending unanswered commands after a reconnect keeps a request from being counted twice.
const redis = new Redis(redisUrl, { autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 1 });
redis.on('error', (error: Error) => console.error(`redis: ${error.message}`));

const server = createApp({ redis }).listen(port, '127.0.0.1', () => {
  console.log(`koa-auth on http://127.0.0.1:${port} (Redis ${redisUrl})`);
  console.log(
    `try: curl -i -H 'content-type: application/json' -d '{"username":"demo","password":"wrong"}' http://127.0.0.1:${port}/login`,
  );
});

function shutdown(): void {
  server.close(() => void redis.quit());
}
process.once('SIGINT', shutdown);
process.once('SIGTERM', shutdown);
