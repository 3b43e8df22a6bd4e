// The first-hour warnings every adapter raises the same way: trust proxy (off with proxy headers, or trusting all) and windowMs in seconds.
import { Agent, request as httpRequest } from 'node:http';
import type { Duration, HttpRateLimitOptions } from '@floodgate/core';
import type { AdapterHarness, AppSpec, RunningApp } from './harness';

/** A logger that keeps every line, and the warning codes among them in order. */
export function recordingLogger(): { logger: { warn(m: string): void; error(m: string): void }; lines: string[]; codes(): string[] } {
  const lines: string[] = [];
  return {
    logger: { warn: (m: string) => void lines.push(m), error: (m: string) => void lines.push(m) },
    lines,
    codes: () => lines.map((l) => /^\[floodgate\] (FG_[A-Z_]+):/.exec(l)?.[1]).filter((c): c is string => c !== undefined),
  };
}

/** GET `path` with these headers; resolves with the status. */
export function getStatus(agent: Agent, port: number, path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method, headers, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

export function runWarningSuite(h: AdapterHarness): void {
  describe(`${h.name}: warnings a newcomer's setup earns (trust proxy, windowMs)`, () => {
    const agent = new Agent({ keepAlive: true });
    let apps: RunningApp[] = [];
    afterEach(async () => {
      await Promise.all(apps.map((a) => a.close()));
      apps = [];
    });
    afterAll(() => agent.destroy());

    async function start(options: HttpRateLimitOptions, trustProxy: AppSpec['trustProxy'] = false) {
      const rec = recordingLogger();
      const app = await h.start({ options: { ...(options.limits ? {} : { limit: 100 }), ...options, logger: rec.logger }, routes: [{ method: 'GET', path: '/r' }], trustProxy });
      apps.push(app);
      const send = async (n: number, headers: Record<string, string> = {}) => {
        const statuses: number[] = [];
        for (let i = 0; i < n; i++) statuses.push(await getStatus(agent, app.port, '/r', headers));
        return statuses;
      };
      return { ...rec, send };
    }

    it.each([
      ['x-forwarded-for', '203.0.113.7'],
      ['forwarded', 'for=203.0.113.7'],
      ['x-real-ip', '203.0.113.7'],
    ])('trust proxy off and a request carries %s: FG_PROXY_HEADER_UNTRUSTED, written once', async (header, value) => {
      const app = await start({});
      expect(await app.send(3, { [header]: value })).toEqual([200, 200, 200]);
      expect(app.codes()).toEqual(['FG_PROXY_HEADER_UNTRUSTED']);
      expect(app.lines[0]).toContain(`a request carried ${header} but the framework trusts no proxy`);
      expect(app.lines[0]).toContain('warnings: { FG_PROXY_HEADER_UNTRUSTED: false }');
    });

    it('trust proxy off and no proxy header: nothing', async () => {
      const app = await start({});
      await app.send(3);
      expect(app.lines).toEqual([]);
    });

    it('FG_PROXY_HEADER_UNTRUSTED switched off by name: nothing', async () => {
      const app = await start({ warnings: { FG_PROXY_HEADER_UNTRUSTED: false } });
      await app.send(3, { 'x-forwarded-for': '203.0.113.7' });
      expect(app.lines).toEqual([]);
    });

    it('trusting every proxy: FG_TRUST_PROXY_ALL, written once (with or without the header)', async () => {
      const app = await start({}, 'all');
      await app.send(2);
      await app.send(2, { 'x-forwarded-for': '203.0.113.7' });
      expect(app.codes()).toEqual(['FG_TRUST_PROXY_ALL']);
      expect(app.lines[0]).toContain('the framework trusts every proxy');
    });

    it('FG_TRUST_PROXY_ALL switched off by name: nothing', async () => {
      const app = await start({ warnings: { FG_TRUST_PROXY_ALL: false } }, 'all');
      await app.send(2, { 'x-forwarded-for': '203.0.113.7' });
      expect(app.lines).toEqual([]);
    });

    it('trusting the one proxy in front: neither warning', async () => {
      const app = await start({}, true);
      await app.send(3, { 'x-forwarded-for': '203.0.113.7' });
      expect(app.lines).toEqual([]);
    });

    it('windowMs: 60 (seconds meant): FG_WINDOW_IN_SECONDS at construction, once, naming the fix', async () => {
      const app = await start({ limit: 2, windowMs: 60 });
      await app.send(1);
      expect(app.codes()).toEqual(['FG_WINDOW_IN_SECONDS']);
      expect(app.lines[0]).toContain("windowMs: 60 is 60 milliseconds. If you meant 60 seconds, write windowMs: '60s' (or 60000)");
    });

    it.each<[Duration]>([['60s'], [60_000], ['60ms'], [1500]])('windowMs: %p: no warning', async (windowMs) => {
      const app = await start({ windowMs });
      await app.send(1);
      expect(app.lines).toEqual([]);
    });

    it('a limit of `limits` with windowMs: 3600 warns too; switched off by name: nothing', async () => {
      const app = await start({ limits: [{ limit: 5, windowMs: '1s' }, { name: 'hourly', limit: 100, windowMs: 3600 }] });
      expect(app.codes()).toEqual(['FG_WINDOW_IN_SECONDS']);
      const off = await start({ windowMs: 60, warnings: { FG_WINDOW_IN_SECONDS: false } });
      await off.send(1);
      expect(off.lines).toEqual([]);
    });
  });
}
