// The override panel's server side over HTTP: an override set through the playground's endpoint is the limit in force on the caller's next request (headers and status), 0 refuses, clearing restores the route's limit, bad input is a 400.
import { startPlayground, type Playground } from '../src/server';

// Response bodies are checked field by field below, so `any` costs no safety here.
const json = (res: Response): Promise<any> => res.json();

describe('playground override endpoints', () => {
  let pg: Playground;
  beforeAll(async () => {
    pg = await startPlayground({ port: 0, log: () => {} });
  });
  afterAll(() => pg?.close());

  const url = (path: string) => new URL(path, pg.url);
  const as = (caller: string) => ({ 'x-playground-caller': caller });
  const hello = async (caller: string) => {
    const res = await fetch(url('/api/override/hello'), { headers: as(caller) });
    await res.text();
    return { status: res.status, limit: res.headers.get('ratelimit-limit'), remaining: res.headers.get('ratelimit-remaining'), retryAfter: res.headers.get('retry-after') };
  };
  const set = (caller: string, body: unknown) =>
    fetch(url('/api/override/set'), { method: 'POST', headers: { ...as(caller), 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const clear = (caller: string) => fetch(url('/api/override/clear'), { method: 'POST', headers: as(caller) });
  const state = async (caller: string) => (await json(await fetch(url('/api/override/state'), { headers: as(caller) }))).override;

  it('/api/info describes the route, its limit and ceiling', async () => {
    const info = await json(await fetch(url('/api/info')));
    expect(info.override).toMatchObject({ path: '/api/override/hello', route: 'GET /api/override/hello', limit: 10, ceiling: 50 });
  });

  it('an override lowers the next decision to its limit, the count used kept; clearing restores the route limit', async () => {
    expect(await hello('ovr-a')).toMatchObject({ status: 200, limit: '10', remaining: '9' });
    expect(await state('ovr-a')).toBeNull();

    const setRes = await set('ovr-a', { limit: 3, ttlMs: 60_000 });
    expect(setRes.status).toBe(201);
    expect((await json(setRes)).override).toMatchObject({ limit: 3, reason: 'playground' });
    expect(await state('ovr-a')).toMatchObject({ limit: 3 });

    // 1 used before, so 3 admits 2 more, then refuses.
    expect(await hello('ovr-a')).toMatchObject({ status: 200, limit: '3', remaining: '1' });
    expect(await hello('ovr-a')).toMatchObject({ status: 200, limit: '3', remaining: '0' });
    const refused = await hello('ovr-a');
    expect(refused).toMatchObject({ status: 429, limit: '3', remaining: '0' });
    expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1);

    // Another caller is not touched.
    expect(await hello('ovr-b')).toMatchObject({ status: 200, limit: '10', remaining: '9' });

    expect((await clear('ovr-a')).status).toBe(204);
    expect(await state('ovr-a')).toBeNull();
    expect(await hello('ovr-a')).toMatchObject({ status: 200, limit: '10', remaining: '6' });
  });

  it('an override of 0 refuses the caller with Retry-After within its ttl; clearing admits again', async () => {
    expect(await hello('ovr-zero')).toMatchObject({ status: 200, limit: '10' });
    expect((await set('ovr-zero', { limit: 0, ttlMs: 30_000 })).status).toBe(201);
    const refused = await hello('ovr-zero');
    expect(refused.status).toBe(429);
    expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1);
    // Its time left, plus at most the default retryAfterJitterMs (1 s).
    expect(Number(refused.retryAfter)).toBeLessThanOrEqual(31);
    expect((await hello('ovr-zero')).status).toBe(429);
    expect((await clear('ovr-zero')).status).toBe(204);
    expect(await hello('ovr-zero')).toMatchObject({ status: 200, limit: '10', remaining: '8' });
  });

  it.each([
    ['a negative limit', { limit: -1 }],
    ['a fraction', { limit: 1.5 }],
    ['a limit past the ceiling', { limit: 51 }],
    ['a string', { limit: '3' }],
    ['a ttl too long', { limit: 3, ttlMs: 10 * 60_000 }],
  ])('refuses %s with 400 and sets nothing', async (_what, body) => {
    const res = await set('ovr-bad', body);
    expect(res.status).toBe(400);
    expect((await json(res)).error).toMatch(/limit: a whole number from 0 to 50/);
    expect(await state('ovr-bad')).toBeNull();
  });

  it('refuses a request without a caller, and a body that is not JSON', async () => {
    const noCaller = await fetch(url('/api/override/set'), { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"limit":3}' });
    expect(noCaller.status).toBe(400);
    expect((await json(noCaller)).error).toMatch(/x-playground-caller/);
    const junk = await fetch(url('/api/override/set'), { method: 'POST', headers: { ...as('ovr-junk'), 'content-type': 'application/json' }, body: '{' });
    expect(junk.status).toBe(400);
    await junk.text();
    expect(await state('ovr-junk')).toBeNull();
  });
});
