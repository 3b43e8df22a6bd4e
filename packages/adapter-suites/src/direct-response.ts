// The respondDirectly suite every adapter runs: Floodgate's own 429 straight to Node with earlier headers kept, or through the framework when off.
import { MemoryStore, type HttpRateLimitOptions } from '@floodgate/core';
import { pollUntil } from '@floodgate/testing';
import type { AdapterHarness, AppSpec, RunningApp } from './harness';

/** One app-level limiter, GET /r, and the framework's paths marked (see `AppSpec.sendPathMarkers`). */
const marked = (options: HttpRateLimitOptions<any>): AppSpec => ({ options, routes: [{ method: 'GET', path: '/r' }], sendPathMarkers: true });

export function runDirectResponseSuite(h: AdapterHarness): void {
  describe(`${h.name}: Floodgate's own 429 (respondDirectly)`, () => {
    let app: RunningApp | undefined;
    afterEach(async () => {
      await app?.close();
      app = undefined;
    });
    const open = async (options: HttpRateLimitOptions<any>) => {
      app = await h.start(marked({ store: new MemoryStore(), limit: 1, windowMs: '1m', retryAfterJitterMs: 0, ...options }));
      const port = app.port;
      return (method = 'GET') => fetch(`http://127.0.0.1:${port}/r`, { method });
    };

    it('by default is written straight to Node: full headers, exact length, headers set before the limiter kept', async () => {
      const request = await open({});
      const ok = await request();
      expect(ok.status).toBe(200);
      // The marker works: a response the framework sent carries it.
      expect(ok.headers.get('x-after')).toBe('yes');
      const limited = await request();
      const body = await limited.text();
      expect(limited.status).toBe(429);
      expect(limited.headers.get('content-type')).toBe('application/problem+json');
      expect(Number(limited.headers.get('content-length'))).toBe(Buffer.byteLength(body));
      expect(JSON.parse(body)).toMatchObject({ status: 429, title: 'Quota Exceeded' });
      expect(limited.headers.get('ratelimit-limit')).toBe('1');
      expect(limited.headers.get('ratelimit-remaining')).toBe('0');
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(limited.headers.get('x-before')).toBe('yes');
      // The framework's outgoing pipeline was skipped...
      expect(limited.headers.get('x-after')).toBeNull();
      // ...but its after-response logging still saw the 429 (it may run after the client has read it).
      const statuses = app!.statuses;
      await pollUntil(async () => (statuses.length >= 2 ? true : undefined), { timeoutMs: 5_000, intervalMs: 2, what: 'the 429 to be logged' });
      expect(statuses).toEqual([200, 429]);
    });

    it('answers HEAD with the headers and no body', async () => {
      const request = await open({});
      expect((await request('HEAD')).status).toBe(200);
      const limited = await request('HEAD');
      expect(limited.status).toBe(429);
      expect(limited.headers.get('retry-after')).not.toBeNull();
      expect(await limited.text()).toBe('');
    });

    it('with respondDirectly: false goes through the framework, same status, headers and body', async () => {
      const request = await open({ respondDirectly: false });
      await request();
      const limited = await request();
      expect(limited.status).toBe(429);
      expect(limited.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(JSON.parse(await limited.text())).toMatchObject({ status: 429 });
      expect(limited.headers.get('ratelimit-remaining')).toBe('0');
      expect(limited.headers.get('x-before')).toBe('yes');
      // Sent by the framework, not written straight to Node.
      expect(limited.headers.get('x-after')).toBe('yes');
    });

    it("a custom handler's body always goes through the framework", async () => {
      const request = await open({ handler: () => ({ slowDown: true }) });
      await request();
      const limited = await request();
      expect(limited.status).toBe(429);
      expect(await limited.json()).toEqual({ slowDown: true });
      // Through the framework even though respondDirectly is on (the default).
      expect(limited.headers.get('x-after')).toBe('yes');
    });

    it('rejects a respondDirectly that is not a boolean, naming the option', async () => {
      await expect(h.start(marked({ respondDirectly: 'yes' as unknown as boolean }))).rejects.toThrow(/respondDirectly.*true or false/);
    });
  });
}
