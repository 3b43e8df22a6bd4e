// The nestjs-api example's one command on a fresh machine: no REDIS_URL, its own redis-server, 200 then 429 on each platform, and SIGTERM stops it all.
import { join } from 'node:path';
import { isProcessAlive, startExample } from '@floodgate/testing';
import { SEARCH_LIMIT } from '../src/app-module';

jest.setTimeout(120_000);

it.each(['express', 'fastify'])('with PLATFORM=%s starts its own redis-server, answers 200 then 429, and SIGTERM stops it and its redis-server', async (platform) => {
  const { run, url, redisPid } = await startExample(join(__dirname, '..', '..', '..'), '@floodgate/example-nestjs-api', 'nestjs-api', { PLATFORM: platform });
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
