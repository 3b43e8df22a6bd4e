// Runs the client-pacing example: `pnpm --filter @floodgate/example-client-pacing start [-- --requests 30 --limit 10 --window-ms 2000]`.
import { parseArgs } from 'node:util';
import { pacedLoop, plainLoop, startLimitedServer, summaryLine } from './demo';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      requests: { type: 'string', default: '30' },
      limit: { type: 'string', default: '10' },
      'window-ms': { type: 'string', default: '2000' },
    },
  });
  const requests = Number(values.requests);
  const limit = Number(values.limit);
  const windowMs = Number(values['window-ms']);
  for (const [name, n] of [['--requests', requests], ['--limit', limit], ['--window-ms', windowMs]] as const) {
    if (!Number.isInteger(n) || n <= 0) throw new Error(`${name}: expected a whole number above 0, got ${n}`);
  }
  console.log(`client-pacing: ${requests} requests to a limit of ${limit} per ${windowMs} ms (Floodgate on Express, draft-10 headers)`);

  // Each loop against a server of its own, so one's spent quota does not slow the other.
  const plainServer = await startLimitedServer({ limit, windowMs });
  const plain = await plainLoop(plainServer.url, requests);
  await plainServer.close();
  console.log(summaryLine('plain fetch', plain));

  const pacedServer = await startLimitedServer({ limit, windowMs });
  const paced = await pacedLoop(pacedServer.url, requests, (e) => console.log(`  pacedFetch waits ${Math.ceil(e.waitMs)} ms (${e.reason}${e.policy ? `, policy ${e.policy}` : ''})`));
  await pacedServer.close();
  console.log(summaryLine('pacedFetch', paced));
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
