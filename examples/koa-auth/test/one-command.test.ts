// The koa-auth example's one command on a fresh machine: no REDIS_URL, its own redis-server, 200 then 429, and SIGTERM stops it all.
import { join } from 'node:path';
import { freshMachineEnv, isProcessAlive, runCommand } from '@floodgate/testing';
import { PUBLIC_LIMIT } from '../src/app';

// The memory fallback and the once-only connection errors are shared code (examples/shared), tested in express-api.
jest.setTimeout(90_000);

it('starts its own redis-server without REDIS_URL, answers 200 then 429, and SIGTERM stops it and its redis-server', async () => {
  const run = runCommand('pnpm', ['--filter', '@floodgate/example-koa-auth', 'start'], { cwd: join(__dirname, '..', '..', '..'), env: freshMachineEnv() });
  try {
    const [, url] = await run.waitFor(/koa-auth on (http:\/\/127\.0\.0\.1:\d+)/);
    const [, redisPid] = await run.waitFor(/redis-server started for this run \(pid (\d+)\)/);
    expect(run.tree()).toContain(Number(redisPid));
    const statuses: number[] = [];
    for (let i = 0; i <= PUBLIC_LIMIT; i++) statuses.push((await fetch(`${url}/products`)).status);
    expect(statuses).toEqual([...Array(PUBLIC_LIMIT).fill(200), 429]);
    expect(await run.terminate('SIGTERM')).toEqual([]);
    expect(isProcessAlive(Number(redisPid))).toBe(false);
  } finally {
    await run.terminate('SIGKILL', 2_000);
  }
});
