// The runtime-limits suite every adapter runs: a limit that is a function of the framework's request (a header plan), its ceiling, and a bad answer.
import { Agent } from 'node:http';
import { MemoryStore, type HttpRateLimitOptions } from '@floodgate/core';
import type { AdapterHarness, RunningApp } from './harness';
import { getStatus, recordingLogger } from './warnings';

/**
 * A request header as each framework hands its request to a limit function: `headers` (Express,
 * Fastify, Koa's ctx, Nest on either platform), or Hono's Context (`c.req.header(name)`).
 */
export function headerOf(request: unknown, name: string): string | undefined {
  const r = request as { headers?: Record<string, unknown>; req?: { header?(n: string): string | undefined } };
  const value = r.headers && typeof r.headers === 'object' && !(typeof (r.headers as { get?: unknown }).get === 'function') ? r.headers[name] : r.req?.header?.(name);
  return typeof value === 'string' ? value : undefined;
}

export function runRuntimeLimitSuite(h: AdapterHarness): void {
  describe(`${h.name}: limits that are functions of the request`, () => {
    const agent = new Agent({ keepAlive: true });
    let apps: RunningApp[] = [];
    afterEach(async () => {
      await Promise.all(apps.map((a) => a.close()));
      apps = [];
    });
    afterAll(() => agent.destroy());

    async function start(options: HttpRateLimitOptions<any>) {
      const rec = recordingLogger();
      const app = await h.start({ options: { store: new MemoryStore(), logger: rec.logger, ...options }, routes: [{ method: 'GET', path: '/r' }] });
      apps.push(app);
      const send = async (n: number, headers: Record<string, string> = {}) => {
        const statuses: number[] = [];
        for (let i = 0; i < n; i++) statuses.push(await getStatus(agent, app.port, '/r', headers));
        return statuses;
      };
      return { ...rec, send };
    }
    const ok = (statuses: number[]) => statuses.filter((s) => s === 200).length;

    it("`limit: (req) => number` (express-rate-limit's form): a header plan gives each plan its own limit", async () => {
      const plan = (req: unknown) => headerOf(req, 'x-plan') ?? 'free';
      const app = await start({ limit: (req: unknown) => (plan(req) === 'pro' ? 4 : 2), key: (req: unknown) => plan(req) });
      expect(ok(await app.send(6, { 'x-plan': 'free' }))).toBe(2);
      expect(ok(await app.send(6, { 'x-plan': 'pro' }))).toBe(4);
    });

    it('an async limit function is waited for', async () => {
      const app = await start({ limit: async () => 3 });
      expect(ok(await app.send(5))).toBe(3);
    });

    it('a hostile header choosing the limit cannot pass limitCeiling: one IP, whatever it sends', async () => {
      const app = await start({ limitCeiling: 3, limit: (req: unknown) => Number(headerOf(req, 'x-plan')) || 1 });
      let admitted = 0;
      for (let i = 0; i < 12; i++) admitted += ok(await app.send(1, { 'x-plan': String(10 ** i) }));
      expect(admitted).toBe(3);
      expect(app.codes()).toContain('FG_LIMIT_CAPPED');
    });

    it('a throwing limit function answers 503 (logged once), never a crash', async () => {
      const app = await start({ limit: () => { throw new Error('plan store down'); } });
      expect(await app.send(3)).toEqual([503, 503, 503]);
      expect(app.codes().filter((c) => c === 'FG_LIMIT_FUNCTION_FAILED')).toHaveLength(1);
    });
  });
}
