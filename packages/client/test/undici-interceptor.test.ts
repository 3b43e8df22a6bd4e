// floodgatePacing as an undici interceptor: Agent.compose, request() and fetch(), aborts, and undici's own retry beside it.
import { Agent, fetch as undiciFetch, interceptors, request } from 'undici';
import { RateLimitWaitError } from '../src';
import { floodgatePacing } from '../src/undici';
import { draft6, fixedWindow, startScripted, type ScriptedServer } from './scripted-server';

let servers: ScriptedServer[] = [];
const agents: Agent[] = [];
async function serve(...args: Parameters<typeof startScripted>): Promise<ScriptedServer> {
  const s = await startScripted(...args);
  servers.push(s);
  return s;
}
function agent(): Agent {
  const a = new Agent();
  agents.push(a);
  return a;
}
afterEach(async () => {
  await Promise.all(servers.map((s) => s.close()));
  await Promise.all(agents.splice(0).map((a) => a.close()));
  servers = [];
});

describe('floodgatePacing (undici interceptor)', () => {
  it('paces request() before the limit: no 429 over three windows', async () => {
    const limit = fixedWindow(3, 1000, draft6(3));
    const server = await serve(limit.script);
    const dispatcher = agent().compose(floodgatePacing({ jitterMs: 20 }));
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) {
      const res = await request(`${server.url}/r`, { dispatcher });
      await res.body.text();
      statuses.push(res.statusCode);
    }
    expect(statuses.every((s) => s === 200)).toBe(true);
    expect(server.seen.filter((s) => s.status === 429)).toHaveLength(0);
    expect(limit.windows).toHaveLength(3);
  });

  it("paces undici's fetch through the same dispatcher and retries a 429 after Retry-After", async () => {
    const server = await serve((_req, n) => (n === 0 ? { status: 429, headers: { 'retry-after': '1' }, body: 'slow down' } : { body: 'fine' }));
    const dispatcher = agent().compose(floodgatePacing({ jitterMs: 0 }));
    const res = await undiciFetch(server.url, { dispatcher });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('fine');
    expect(server.seen.map((s) => s.status)).toEqual([429, 200]);
    expect(server.seen[1].at - server.seen[0].at).toBeGreaterThanOrEqual(1000 - 5);
  });

  it('reads a problem+json body for the retry time, and passes the body on when it does not retry', async () => {
    const body = '{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","status":429,"violated-policies":["default"]}';
    const server = await serve(() => ({ status: 429, headers: { 'content-type': 'application/problem+json' }, body }));
    const res = await request(server.url, { dispatcher: agent().compose(floodgatePacing()) });
    expect(res.statusCode).toBe(429);
    expect(await res.body.text()).toBe(body);
    expect(server.seen).toHaveLength(1);
  });

  it('fails with RateLimitWaitError when the wait passes maxWaitMs (per call: opts.pacing)', async () => {
    const server = await serve(() => ({ headers: { 'ratelimit-remaining': '0', 'ratelimit-reset': '30' } }));
    const dispatcher = agent().compose(floodgatePacing());
    await (await request(server.url, { dispatcher })).body.text();
    const error = await request(server.url, { dispatcher, pacing: { maxWaitMs: 500 } } as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitWaitError);
    expect((error as RateLimitWaitError).code).toBe('FG_CLIENT_WAIT_EXCEEDS_LIMIT');
    expect(server.seen).toHaveLength(1);
  });

  it("ends a wait when request()'s signal aborts, and when fetch is aborted", async () => {
    const server = await serve(() => ({ headers: { 'ratelimit-remaining': '0', 'ratelimit-reset': '30' } }));
    const dispatcher = agent().compose(floodgatePacing());
    await (await request(server.url, { dispatcher })).body.text();
    const viaRequest = request(server.url, { dispatcher, signal: AbortSignal.timeout(50) });
    await expect(viaRequest).rejects.toMatchObject({ name: expect.stringMatching(/AbortError|TimeoutError/) });
    const controller = new AbortController();
    const viaFetch = undiciFetch(server.url, { dispatcher, signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    await expect(viaFetch).rejects.toMatchObject({ name: 'AbortError' });
    expect(server.seen).toHaveLength(1);
  });

  it("composes with undici's retry interceptor: each of its attempts is paced too", async () => {
    // undici's retry (outside) handles the network error; ours (inside) holds the retry until Retry-After.
    let n = 0;
    const server = await serve(() => {
      n++;
      if (n === 1) return { status: 429, headers: { 'retry-after': '1' } };
      return { body: 'ok' };
    });
    const dispatcher = agent().compose(floodgatePacing({ maxRetries: 0, jitterMs: 0 }), interceptors.retry({ maxRetries: 2, minTimeout: 10, maxTimeout: 10, statusCodes: [429] }));
    const res = await request(server.url, { dispatcher });
    expect(res.statusCode).toBe(200);
    await res.body.text();
    expect(server.seen.map((s) => s.status)).toEqual([429, 200]);
    // undici's retry waits at most 10 ms (maxTimeout): the second of wait is the pacer's.
    expect(server.seen[1].at - server.seen[0].at).toBeGreaterThanOrEqual(1000 - 5);
  });

  it('caps requests in flight at a concurrency quota', async () => {
    const server = await serve(() => ({ delayMs: 30, headers: { 'ratelimit-policy': '"c";q=3;qu="concurrent-requests"' } }));
    const dispatcher = agent().compose(floodgatePacing());
    await (await request(server.url, { dispatcher })).body.text();
    await Promise.all(Array.from({ length: 9 }, () => request(server.url, { dispatcher }).then((r) => r.body.text())));
    expect(server.maxInFlight).toBeLessThanOrEqual(3);
    expect(server.seen).toHaveLength(10);
  });
});
