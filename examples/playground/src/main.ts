// `pnpm demo` lands here: parses --port / PORT and REDIS_URL, starts the playground and prints its URL.
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
  const redisUrl = process.env.REDIS_URL || undefined;
  let playground;
  try {
    playground = await startPlayground({ port, redisUrl });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') console.error(`playground: port ${port} is in use; try --port ${port + 1} or PORT=0`);
    else console.error('playground: could not start:', error);
    process.exit(1);
  }
  console.log(`Floodgate playground: ${playground.url}`);
  console.log(redisUrl ? `race panel: Redis at ${redisUrl.replace(/\/\/[^@/]*@/, '//')}` : 'race panel: off (set REDIS_URL to enable it)');
  let closing = false;
  const stop = () => {
    if (closing) return;
    closing = true;
    playground.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

if (require.main === module) void main();
