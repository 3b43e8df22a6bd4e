// The client-pacing example's loops: pacedFetch takes no 429 where a plain fetch takes one for every call past the limit.
import { pacedLoop, plainLoop, startLimitedServer } from '../src/demo';

jest.setTimeout(60_000);

it('pacedFetch does every call with no 429; a plain fetch gets 429s for the calls past the limit', async () => {
  const limit = { limit: 4, windowMs: 1000 };
  const plainServer = await startLimitedServer(limit);
  const pacedServer = await startLimitedServer(limit);
  try {
    const waits: string[] = [];
    const paced = await pacedLoop(pacedServer.url, 12, (e) => waits.push(e.reason));
    expect(paced).toMatchObject({ requests: 12, done: 12, tooMany: 0 });
    // 12 calls at 4 per window: it waited for the quota twice, for the second and the third window.
    expect(waits).toEqual(['quota', 'quota']);
    const plain = await plainLoop(plainServer.url, 12);
    expect(plain.tooMany).toBeGreaterThan(0);
    expect(plain.done + plain.tooMany).toBe(12);
  } finally {
    await plainServer.close();
    await pacedServer.close();
  }
});
