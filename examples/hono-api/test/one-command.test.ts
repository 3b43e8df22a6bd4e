// The hono-api example's one command on a fresh machine: no REDIS_URL, its own redis-server, 200 then 429, and SIGTERM stops it all.
import { join } from 'node:path';
import { isProcessAlive, startExample } from '@floodgate/testing';
import { LIMIT, REPORT_COST } from '../src/app';

jest.setTimeout(90_000);

it('starts its own redis-server without REDIS_URL, answers 200 then 429, and SIGTERM stops it and its redis-server', async () => {
  const { run, url, redisPid } = await startExample(join(__dirname, '..', '..', '..'), '@floodgate/example-hono-api', 'hono-api');
  try {
    expect(run.tree()).toContain(redisPid);
    const statuses: number[] = [];
    for (let i = 0; i <= LIMIT / REPORT_COST; i++) statuses.push((await fetch(`${url}/reports`, { method: 'POST' })).status);
    expect(statuses).toEqual([...Array(LIMIT / REPORT_COST).fill(200), 429]);
    expect(await run.terminate('SIGTERM')).toEqual([]);
    expect(isProcessAlive(redisPid)).toBe(false);
  } finally {
    await run.terminate('SIGKILL', 2_000);
  }
});
