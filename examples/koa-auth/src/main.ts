// Runs the koa-auth example: REDIS_URL, else a redis-server of its own (if on PATH), else memory; PORT (default 3000).
import type { Server } from 'node:http';
import { Redis } from 'ioredis';
import { closeOnSignals, exampleRedis } from '../../shared/src/local-redis';
import { createApp } from './app';

const port = Number(process.env.PORT ?? 3000);

async function main(): Promise<void> {
  // Not resending unanswered commands after a reconnect keeps a request from being counted twice.
  const redis = await exampleRedis(
    (url) => new Redis(url, { autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 1 }),
    { memoryNote: 'Counts and lock-outs are per process and lost on restart.' },
  );
  const server = await new Promise<Server>((resolve, reject) => {
    const listening = createApp({ redis: redis.client }).listen(port, '127.0.0.1', () => resolve(listening));
    listening.once('error', reject);
  }).catch(async (error: unknown) => {
    await redis.close();
    throw error;
  });
  const address = server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : port}`;
  console.log(`koa-auth on ${url}`);
  console.log(`limits: ${redis.description}`);
  console.log(
    `try: curl -i -H 'content-type: application/json' -d '{"username":"demo","password":"wrong"}' ${url}/login`,
  );
  closeOnSignals(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await redis.close();
  });
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
