// `pnpm demo` on a fresh machine: no REDIS_URL, the race panel on a redis-server of its own, and SIGTERM / SIGINT stop the demo and that server.
import { join } from 'node:path';
import { freshMachineEnv, isProcessAlive, runCommand } from '@floodgate/testing';

const root = join(__dirname, '..', '..', '..');
jest.setTimeout(90_000);

describe.each([
  { how: 'SIGTERM to `pnpm demo`', command: 'pnpm', args: ['demo', '--port', '0'], signal: 'SIGTERM' as const },
  { how: 'SIGINT to `node scripts/demo.mjs`', command: process.execPath, args: ['scripts/demo.mjs', '--port', '0'], signal: 'SIGINT' as const },
])('the demo without REDIS_URL, stopped by $how', ({ command, args, signal }) => {
  it('runs the race panel on its own redis-server, then stops itself and that server', async () => {
    const run = runCommand(command, args, { cwd: root, env: freshMachineEnv() });
    try {
      const [, url] = await run.waitFor(/Floodgate playground: (http:\/\/127\.0\.0\.1:\d+\/)/);
      const [, redisPid] = await run.waitFor(/race panel: .*redis-server started for this run \(pid (\d+)\)/);
      expect(run.tree()).toContain(Number(redisPid));
      const info = (await (await fetch(`${url}api/info`)).json()) as { race: { enabled: boolean } };
      expect(info.race.enabled).toBe(true);
      const race = await fetch(`${url}api/race`, { method: 'POST', body: JSON.stringify({ requests: 50, limit: 10 }) });
      expect(race.status).toBe(200);
      expect(((await race.json()) as { floodgate: { admitted: number } }).floodgate.admitted).toBe(10);
      expect(await run.terminate(signal)).toEqual([]);
      expect(isProcessAlive(Number(redisPid))).toBe(false);
    } finally {
      await run.terminate('SIGKILL', 2_000);
    }
  });
});
