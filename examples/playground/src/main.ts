// `pnpm demo` lands here: parses --port / PORT, finds Redis for the race panel (REDIS_URL, else its own redis-server), starts the playground.
import { closeOnSignals, localRedis } from '../../shared/src/local-redis';
import { startPlayground } from './server';

/** The port from `--port N`, `--port=N` or PORT, in that order; default 3000. Throws on a bad value. */
export function parsePort(argv: readonly string[], env: NodeJS.ProcessEnv): number {
  let raw: string | undefined;
  let given = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--port' || arg === '-p') {
      raw = argv[++i];
      given = true;
    } else if (arg.startsWith('--port=')) {
      raw = arg.slice('--port='.length);
      given = true;
    }
  }
  if (!given) {
    if (env.PORT === undefined || env.PORT === '') return 3000;
    raw = env.PORT;
  }
  const port = Number(raw);
  if (raw === undefined || !/^\d+$/.test(raw.trim()) || port > 65535) {
    throw new RangeError(`port must be a whole number from 0 to 65535 (0 picks a free one); got ${JSON.stringify(raw)}`);
  }
  return port;
}

async function main(): Promise<void> {
  let port: number;
  try {
    port = parsePort(process.argv.slice(2), process.env);
  } catch (error) {
    console.error(`playground: ${(error as Error).message}`);
    process.exit(2);
  }
  // The race panel's Redis: REDIS_URL, else a redis-server of our own when one is on PATH, stopped on exit.
  let redis;
  try {
    redis = await localRedis({ memoryNote: 'The race panel is off; everything else works.' });
  } catch (error) {
    console.error(`playground: could not start redis-server for the race panel: ${(error as Error).message}`);
    process.exit(1);
  }
  let playground;
  try {
    playground = await startPlayground({ port, redisUrl: redis.url });
  } catch (error) {
    await redis.stop();
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') console.error(`playground: port ${port} is in use; try --port ${port + 1} or PORT=0`);
    else console.error('playground: could not start:', error);
    process.exit(1);
  }
  console.log(`Floodgate playground: ${playground.url}`);
  console.log(`race panel: ${redis.description}`);
  const started = playground;
  closeOnSignals(async () => {
    try {
      await started.close();
    } finally {
      await redis.stop();
    }
  });
}

if (require.main === module) void main();
