// What holding costs a server (docs/shaping.md#what-holding-costs-a-server): the server's heap and RSS with N requests held on a shaped route, against N requests held open by a waiting handler, measured in a child process with --expose-gc.
//   pnpm --filter @floodgate/bench shape-hold [N]   (N requests, default 1000)
import { fork, type ChildProcess } from 'node:child_process';
import { Agent, request, type ClientRequest } from 'node:http';
import { join } from 'node:path';

const N = Number(process.argv[2] ?? 1000);

type Reply = { type: 'ready'; port: number } | { type: 'measured'; heap: number; rss: number; held: number; refunds: number; slow: number; served: number; decided: number };

function next<T extends Reply['type']>(child: ChildProcess, type: T): Promise<Extract<Reply, { type: T }>> {
  return new Promise((resolve) => {
    const on = (m: Reply) => {
      if (m.type !== type) return;
      child.off('message', on);
      resolve(m as Extract<Reply, { type: T }>);
    };
    child.on('message', on);
  });
}

async function measure(child: ChildProcess): Promise<Extract<Reply, { type: 'measured' }>> {
  const reply = next(child, 'measured');
  child.send({ type: 'measure' });
  return reply;
}

/** Polls the child's counts (not the clock) until `done` says so. */
async function until(child: ChildProcess, done: (m: Extract<Reply, { type: 'measured' }>) => boolean): Promise<Extract<Reply, { type: 'measured' }>> {
  for (;;) {
    const m = await measure(child);
    if (done(m)) return m;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function main(): Promise<void> {
  const child = fork(join(__dirname, 'shape-hold-server.ts'), [], {
    execArgv: ['--expose-gc', '--conditions=source', '--import', 'tsx'],
    env: { ...process.env, SHAPE_HOLDS: String(N) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const { port } = await next(child, 'ready');
  const agent = new Agent({ keepAlive: false, maxSockets: N * 2 });
  const open = (path: string): ClientRequest => {
    const req = request({ host: '127.0.0.1', port, path, agent }, (res) => res.resume());
    req.on('error', () => undefined);
    req.end();
    return req;
  };
  // Warm-up: one served request on each route, so that code and caches are in place before the baseline.
  await new Promise<void>((resolve) => request({ host: '127.0.0.1', port, path: '/shaped', agent }, (res) => (res.resume(), res.on('end', resolve))).end());
  const base = await measure(child);
  const shaped = Array.from({ length: N }, () => open('/shaped'));
  const holding = await until(child, (m) => m.decided - base.decided >= N);
  for (const r of shaped) r.destroy();
  const released = await until(child, (m) => m.refunds + (m.served - base.served) >= N);
  const base2 = await measure(child);
  const slow = Array.from({ length: N }, () => open('/slow'));
  const waiting = await until(child, (m) => m.slow >= N);
  for (const r of slow) r.destroy();
  const kb = (bytes: number) => (bytes / 1024).toFixed(1);
  // The first holds end while the last ones arrive: the figure is per request held at the reading.
  const now = holding.held - base.held - (holding.served - base.served - (N - (holding.held - base.held)));
  console.log(`shape-hold: ${N} requests sent to a shaped route (Express, MemoryStore), ${now} held at the reading`);
  console.log(`  held:            heap +${kb(holding.heap - base.heap)} KB (${kb((holding.heap - base.heap) / now)} KB per request), rss +${kb(holding.rss - base.rss)} KB`);
  console.log(`  all aborted:     ${released.refunds} refunds, heap back to +${kb(released.heap - base.heap)} KB`);
  console.log(`  same N in a waiting handler (no shaping): heap +${kb(waiting.heap - base2.heap)} KB (${kb((waiting.heap - base2.heap) / N)} KB per request)`);
  agent.destroy();
  child.kill();
}

void main();
