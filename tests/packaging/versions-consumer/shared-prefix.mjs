// One of two apps on one Redis that leave `prefix` at its default: a limiter on RedisStore that prints the first Floodgate warning it writes, then exits.
import { createLimiter, RedisStore } from '@floodgate/core';
import { Redis } from 'ioredis';

const url = process.env.REDIS_URL; // required: without one, ioredis would quietly use localhost:6379
if (!url) throw new Error('Set REDIS_URL, e.g. redis://127.0.0.1:6379');
const client = new Redis(url, { autoResendUnfulfilledCommands: false });
client.on('error', (error) => console.error(`redis: ${error.message}`));
const limit = Number(process.argv[2]);
const limiter = createLimiter({
  store: new RedisStore({ client, announceMs: 200 }),
  limit,
  windowMs: '1m',
  logger: {
    warn(message) {
      process.stdout.write(`${JSON.stringify({ limit, warning: message })}\n`);
      client.disconnect();
      process.exit(0);
    },
    error: (message) => console.error(message),
  },
});
await limiter.consume('user:1');
