// pacedFetch against Floodgate's default algorithm (sliding-window-counter) on real Redis: what the reset tells the pacer to wait.
import { pacedFetch, type WaitEvent } from '@floodgate/client';
import { startRedis, type RedisServer } from '@floodgate/testing';
import { startPacingServer, type PacingServer, type PacingServerId } from '../src/client-servers';

const LIMIT = { limit: 10, windowMs: 2000 };
const REQUESTS = 30;

let redis: RedisServer;
const servers: PacingServer[] = [];

beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
  await redis?.stop();
});

/** The loop, one call after another, with the pacer's holds for quota as it computed them (no jitter). */
async function run(id: PacingServerId) {
  const server = await startPacingServer(id, redis.port, `sw${Math.random().toString(36).slice(2, 8)}`, LIMIT);
  servers.push(server);
  const holds: number[] = [];
  let tooMany = 0;
  const counting = async (input: string | URL | Request, init?: RequestInit) => {
    const response = await fetch(input, init);
    if (response.status === 429) tooMany++;
    return response;
  };
  const paced = pacedFetch(counting, { jitterMs: 0, onWait: (e: WaitEvent) => void (e.reason === 'quota' && holds.push(e.waitMs)) });
  let ok = 0;
  for (let i = 0; i < REQUESTS; i++) {
    const response = await paced(server.url);
    await response.arrayBuffer();
    if (response.ok) ok++;
  }
  return { ok, tooMany, holds };
}

describe.each<PacingServerId>(['floodgate-express-draft-6', 'floodgate-fastify-draft-10'])('%s, sliding-window-counter, 10 per 2 s', (id) => {
  it('when nothing is left the reset names the next unit, not the whole quota: no 429, and no hold past one window but the first', async () => {
    const { ok, tooMany, holds } = await run(id);
    expect(ok).toBe(REQUESTS);
    expect(tooMany).toBe(0);
    // Before, the reset of an admission that left 0 was the full restore, the end of the next window:
    // more than one window (2 s) away every time, so each hold was 3 or 4 s and the loop ran at half
    // the rate. Now it is when the next unit is back: only the first hold, after the opening burst
    // of 10 in one window, may pass a window; the others are the next unit's second, rounded up.
    expect(holds.length).toBeGreaterThanOrEqual(3);
    for (const ms of holds.slice(1)) expect(ms).toBeLessThanOrEqual(LIMIT.windowMs);
  }, 60_000);
});
