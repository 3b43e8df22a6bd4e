// The express-api example's one command on a fresh machine: no REDIS_URL, its own redis-server (or memory), 200 then 429, and SIGTERM stops it all.
import { createServer } from 'node:net';
import { join } from 'node:path';
import { freshMachineEnv, isProcessAlive, runCommand, startExample } from '@floodgate/testing';
import { LIMIT } from '../src/app';

const root = join(__dirname, '..', '..', '..');
const example = join(__dirname, '..');
jest.setTimeout(90_000);

/** Statuses of `count` GET /widgets with the demo API key. */
async function widgets(url: string, count: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < count; i++) statuses.push((await fetch(`${url}/widgets`, { headers: { 'x-api-key': 'demo' } })).status);
  return statuses;
}

function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

describe('express-api: the one command', () => {
  it('starts its own redis-server without REDIS_URL, answers 200 then 429, and SIGTERM stops it and its redis-server', async () => {
    const { run, url, redisPid } = await startExample(root, '@floodgate/example-express-api', 'express-api');
    try {
      expect(run.tree()).toContain(redisPid);
      expect(await widgets(url, LIMIT + 1)).toEqual([...Array(LIMIT).fill(200), 429]);
      expect(await run.terminate('SIGTERM')).toEqual([]);
      expect(isProcessAlive(redisPid)).toBe(false);
    } finally {
      await run.terminate('SIGKILL', 2_000);
    }
  });

  it('runs on the memory store without redis-server on PATH, and says so in one line', async () => {
    // No PATH at all, so no redis-server on it: node and tsx are started by their paths.
    const tsx = require.resolve('tsx/cli', { paths: [example] });
    const run = runCommand(process.execPath, [tsx, '--conditions=source', 'src/main.ts'], {
      cwd: example,
      env: freshMachineEnv({ PATH: '/nonexistent' }),
    });
    try {
      const [, url] = await run.waitFor(/express-api on (http:\/\/127\.0\.0\.1:\d+)/);
      await run.waitFor(/limits: /);
      expect(run.output().match(/counting in memory/g)).toHaveLength(1);
      expect(await widgets(url, LIMIT + 1)).toEqual([...Array(LIMIT).fill(200), 429]);
      expect(await run.terminate('SIGTERM')).toEqual([]);
    } finally {
      await run.terminate('SIGKILL', 2_000);
    }
  });

  it('reports an unreachable REDIS_URL once, not once per reconnect', async () => {
    const url = `redis://127.0.0.1:${await closedPort()}`;
    const tsx = require.resolve('tsx/cli', { paths: [example] });
    const run = runCommand(process.execPath, [tsx, '--conditions=source', 'src/main.ts'], { cwd: example, env: freshMachineEnv({ REDIS_URL: url }) });
    try {
      const [, appUrl] = await run.waitFor(/express-api on (http:\/\/127\.0\.0\.1:\d+)/);
      await run.waitFor(/ECONNREFUSED/);
      // Requests keep being answered (fail-local: this instance's share) while the client keeps reconnecting behind them.
      for (let i = 0; i < 5; i++) await widgets(appUrl, 1);
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(run.output().match(/ECONNREFUSED/g)).toHaveLength(1);
    } finally {
      await run.terminate('SIGKILL', 2_000);
    }
  });
});
