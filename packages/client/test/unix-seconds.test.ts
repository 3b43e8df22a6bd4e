// Resets in whole Unix seconds (X-RateLimit-Reset): read as the start of the named second, and as its end once a server shows it rounds down.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pacedFetch } from '../src';

let servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  servers = [];
});

/** A loopback server answering with `handle`; no Date field, so the client reads Unix times against its own clock (the same one). */
async function serve(handle: (res: ServerResponse, now: number) => void): Promise<string> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    res.sendDate = false;
    req.resume();
    handle(res, Date.now());
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/**
 * One unit per `spacingMs`, the next free moment sent as X-RateLimit-Reset in Unix seconds rounded
 * `rounding`; a request before that moment is refused with koa-ratelimit's Retry-After (whole
 * seconds, rounded down). Counts its refusals.
 */
async function oneUnitServer(spacingMs: number, rounding: 'up' | 'down') {
  let nextFree = 0;
  const state = { refused: 0, admitted: 0 };
  const round = rounding === 'up' ? Math.ceil : Math.floor;
  const url = await serve((res, now) => {
    const headers = (): Record<string, string> => ({ 'x-ratelimit-limit': '1', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(round(nextFree / 1000)) });
    if (now < nextFree) {
      state.refused++;
      res.writeHead(429, { ...headers(), 'retry-after': String(Math.floor((nextFree - now) / 1000)) });
      res.end();
      return;
    }
    state.admitted++;
    // Never on a whole second, so that rounding up and down name different seconds.
    nextFree = now + spacingMs;
    if (nextFree % 1000 === 0) nextFree += 1;
    res.writeHead(200, headers());
    res.end('ok');
  });
  return { url, state, nextFree: () => nextFree };
}

describe('a reset in whole Unix seconds', () => {
  it('is held until the start of the second it names, not its end (a server that rounds up names the moment or later)', async () => {
    const server = await oneUnitServer(2500, 'up');
    const fetch = pacedFetch(globalThis.fetch, { jitterMs: 0 });
    const before = Date.now();
    expect((await fetch(server.url)).status).toBe(200);
    const named = Math.ceil(server.nextFree() / 1000) * 1000;
    const quota = fetch.pacer.snapshot(new URL(server.url).origin).quotas[0];
    // The hold ends at the named second's start (before: a second later, at its end).
    expect(quota.resetInMs).toBeLessThanOrEqual(named - before);
    // ... and never before the moment the server rounded up into it.
    expect(quota.resetInMs).toBeGreaterThanOrEqual(server.nextFree() - Date.now());
    // Paced on it, the next requests are never refused.
    for (let i = 0; i < 2; i++) expect((await fetch(server.url)).status).toBe(200);
    expect(server.state).toEqual({ refused: 0, admitted: 3 });
  }, 20_000);

  it('costs one 429 at most against a server that rounds down (koa-ratelimit), then reads the end of the second', async () => {
    const server = await oneUnitServer(1200, 'down');
    const fetch = pacedFetch(globalThis.fetch, { jitterMs: 0 });
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await fetch(server.url)).status);
    // Every call done (the refused one retried by pacedFetch), one refusal in all.
    expect(statuses).toEqual([200, 200, 200, 200]);
    expect(server.state).toEqual({ refused: 1, admitted: 4 });
    // Learned: the hold now runs to the end of the named second, at or after the moment itself.
    const before = Date.now();
    const quota = fetch.pacer.snapshot(new URL(server.url).origin).quotas[0];
    expect(quota.resetInMs).toBeGreaterThan(Math.floor(server.nextFree() / 1000) * 1000 - before);
    expect(quota.resetInMs).toBeGreaterThanOrEqual(server.nextFree() - Date.now());
  }, 30_000);
});
