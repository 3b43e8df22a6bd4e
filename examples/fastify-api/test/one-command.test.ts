// The fastify-api example's one command on a fresh machine: no REDIS_URL, its own redis-server, 200 then 429, and SIGTERM stops it all.
import { join } from 'node:path';
import { isProcessAlive, startExample } from '@floodgate/testing';
import { SEARCH_LIMIT } from '../src/app';

// The memory fallback and the once-only connection errors are shared code (examples/shared), tested in express-api.
jest.setTimeout(90_000);

it('starts its own redis-server without REDIS_URL, answers 200 then 429, and SIGTERM stops it and its redis-server', async () => {
  const { run, url, redisPid } = await startExample(join(__dirname, '..', '..', '..'), '@floodgate/example-fastify-api', 'fastify-api');
  try {
    expect(run.tree()).toContain(redisPid);
    const statuses: number[] = [];
    for (let i = 0; i <= SEARCH_LIMIT; i++) statuses.push((await fetch(`${url}/search?q=floodgate`)).status);
    expect(statuses).toEqual([...Array(SEARCH_LIMIT).fill(200), 429]);
    expect(await run.terminate('SIGTERM')).toEqual([]);
    expect(isProcessAlive(redisPid)).toBe(false);
  } finally {
    await run.terminate('SIGKILL', 2_000);
  }
});
