import { startServer, killAllChildren } from './children';
import { runLoad } from './load';
(async () => {
  const t0 = Date.now();
  const s = await startServer({ framework: 'express', mounts: [{ path: '/', limiter: { kind: 'none', limit: 1, windowMs: 1, prefix: 'x' } }] }, 'none');
  console.log('started in', Date.now() - t0, s);
  console.log(await runLoad({ url: s.url, connections: 10, durationS: 1.5 }));
  await s.stop();
})().finally(killAllChildren);
