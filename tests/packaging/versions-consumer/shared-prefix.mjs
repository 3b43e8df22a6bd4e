// One of two apps on one Redis that leave `prefix` at its default: a limiter on RedisStore that prints the first Floodgate warning it writes, and exits when its stdin ends.
import { createLimiter, RedisStore } from '@floodgate/core';
import { Redis } from 'ioredis';

const url = process.env.REDIS_URL; // required: without one, ioredis would quietly use localhost:6379
if (!url) throw new Error('Set REDIS_URL, e.g. redis://127.0.0.1:6379');
const client = new Redis(url, { autoResendUnfulfilledCommands: false });
client.on('error', (error) => console.error(`redis: ${error.message}`));
const limit = Number(process.argv[2]);
let warned = false;
process.stdin.resume();
// The limiter stays reachable until the end (this handler reads it): an app's routes hold theirs, and
// a limiter nothing can reach any longer stops announcing once collected (the fleet is held weakly).
// Before, nothing read it after the first consume, and an early garbage collection ended both apps'
// announcements: neither ever saw the other (the test hit its time limit, the apps idle, Redis empty).
process.stdin.on('end', () => {
  if (limiter.health().fleets?.length !== 1) console.error('no fleet to report');
  client.disconnect();
  process.exit(0);
});
const limiter = createLimiter({
  store: new RedisStore({ client, announceMs: 200 }),
  limit,
  windowMs: '1m',
  logger: {
    // Printed once; the app keeps running (and announcing, so a sibling started late on a busy
    // machine still finds its record) until the test, having both warnings, ends its stdin.
    warn(message) {
      if (warned) return;
      warned = true;
      process.stdout.write(`${JSON.stringify({ limit, warning: message })}\n`);
    },
    error: (message) => console.error(message),
  },
});
await limiter.consume('user:1');
