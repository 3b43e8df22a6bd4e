// The usage-route and reserve-then-settle suite every adapter runs on a real redis-server: a usage route keyed on the caller's verified identity only, and settles through the request (exact sums, once per request, the cap, debt).
import { type Agent, request as httpRequest } from 'node:http';
import { RedisStore, type HttpRateLimitOptions } from '@floodgate/core';
import { prng } from '@floodgate/testing';
import type { AdapterHarness, RunningApp, SettleAnswer } from './harness';
import { quietLogger, useRedisSuite } from './requests';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any;
}

function send(agent: Agent, port: number, method: 'GET' | 'POST', path: string, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method, headers, agent }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // not JSON: kept as text
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/** The keys resolveKey knows: each a verified account of its own. */
const ACCOUNTS: Record<string, string> = { 'key-a': 'a', 'key-b': 'b', 'key-c': 'c', 'key-d': 'd', 'key-e': 'e' };
const resolveKey = async (key: string) => (ACCOUNTS[key] ? { account: ACCOUNTS[key] } : null);
const HOUR = 3_600_000;

interface PolicyJson {
  policy: string;
  limit: number;
  used: number;
  remaining: number;
  windowMs: number;
  resetMs: number;
  resetsAt: string;
}

export function runUsageSettleSuite(h: AdapterHarness): void {
  describe(`quotas through ${h.name} (real Redis): usage route, reserve then settle`, () => {
    const suite = useRedisSuite();

    /**
     * POST /chat reserves 10 (its `cost`) and settles what `x-actual` says (settle.maxCost 100) on
     * an app-level limit of 1000 an hour; POST /big reserves 5 of its own limit of 20 an hour
     * (settle.maxCost 40); GET /usage answers the caller's usage of both.
     */
    async function start(extra: HttpRateLimitOptions<any> = {}): Promise<RunningApp> {
      const store = new RedisStore({ client: suite().client, timeoutMs: 5_000 });
      const prefix = `quota${Math.random().toString(36).slice(2, 10)}`;
      const app = await h.start({
        options: { logger: quietLogger, store, prefix, limit: 1_000, windowMs: '1h', resolveKey, ...extra },
        routes: [
          { method: 'POST', path: '/chat', options: { cost: 10, settle: { maxCost: 100 } } },
          { method: 'POST', path: '/big', options: { limit: 20, windowMs: '1h', cost: 5, settle: { maxCost: 40 } } },
        ],
        usage: { path: '/usage', routes: ['POST /chat', 'POST /big'] },
        settleFromHeader: true,
      });
      suite().apps.push(app);
      return app;
    }
    const post = (app: RunningApp, path: string, headers: Record<string, string>) => send(suite().agent, app.port, 'POST', path, headers);
    const usage = async (app: RunningApp, headers: Record<string, string>) => {
      const a = await send(suite().agent, app.port, 'GET', '/usage', headers);
      expect(a.status).toBe(200);
      expect(String(a.headers['content-type'])).toContain('application/json');
      const routes = (a.body as { routes: { route: string; policies: PolicyJson[] }[] }).routes;
      return Object.fromEntries(routes.map((r) => [r.route, r.policies]));
    };
    const used = async (app: RunningApp, headers: Record<string, string>, route = 'POST /chat') => (await usage(app, headers))[route][0].used;

    it("answers the caller's own usage (policies, used, remaining, resets at) without consuming; a made-up key or a client-written header shows the IP's usage, never a verified account's", async () => {
      const app = await start();
      for (let i = 0; i < 3; i++) expect((await post(app, '/chat', { 'x-api-key': 'key-a' })).status).toBe(200);
      for (let i = 0; i < 2; i++) expect((await post(app, '/chat', {})).status).toBe(200);
      expect((await post(app, '/big', { 'x-api-key': 'key-a' })).status).toBe(200);
      const before = Date.now();
      const a = await usage(app, { 'x-api-key': 'key-a' });
      expect(a['POST /chat']).toEqual([{ policy: 'default', limit: 1_000, used: 30, remaining: 970, windowMs: HOUR, resetMs: expect.any(Number), resetsAt: expect.any(String) }]);
      expect(a['POST /big']).toMatchObject([{ policy: 'default', limit: 20, used: 5, remaining: 15, windowMs: HOUR }]);
      const resetsAt = Date.parse(a['POST /chat'][0].resetsAt);
      expect(resetsAt).toBeGreaterThan(before - 1_000);
      expect(resetsAt).toBeLessThanOrEqual(before + 2 * HOUR + 5_000);
      // Reading is not consuming.
      expect(await used(app, { 'x-api-key': 'key-a' })).toBe(30);
      // Another verified account: its own (nothing yet).
      expect(await used(app, { 'x-api-key': 'key-b' })).toBe(0);
      // No key, a key nobody issued, a forwarded-for header the app does not trust: the IP's 20, not key-a's 30.
      expect(await used(app, {})).toBe(20);
      expect(await used(app, { 'x-api-key': 'made-up-key' })).toBe(20);
      expect(await used(app, { 'x-forwarded-for': '203.0.113.7' })).toBe(20);
      expect(await used(app, { authorization: 'Bearer key-a-guess' })).toBe(20);
    });

    it("answers 401 for a key resolveKey does not know under unknownKey: 'reject'", async () => {
      const app = await start({ unknownKey: 'reject' });
      const a = await send(suite().agent, app.port, 'GET', '/usage', { 'x-api-key': 'made-up-key' });
      expect(a.status).toBe(401);
      expect(await used(app, { 'x-api-key': 'key-a' })).toBe(0);
    });

    it('40 concurrent requests each reserving 10 and settling a random actual cost through the request leave exactly the sum charged', async () => {
      const app = await start();
      const rnd = prng(2029);
      const actual = Array.from({ length: 40 }, () => rnd.int(0, 25));
      const answers = await Promise.all(actual.map((cost) => post(app, '/chat', { 'x-api-key': 'key-b', 'x-actual': String(cost) })));
      expect(answers.map((a) => a.status)).toEqual(actual.map(() => 200));
      expect(answers.map((a) => (a.body as { settle: SettleAnswer }).settle.outcomes)).toEqual(actual.map(() => ['settled']));
      expect(await used(app, { 'x-api-key': 'key-b' })).toBe(actual.reduce((x, y) => x + y, 0));
    });

    it('a second settle of the same request changes nothing; a settle above settle.maxCost charges maxCost (capped)', async () => {
      const app = await start();
      const twice = await post(app, '/chat', { 'x-api-key': 'key-c', 'x-actual': '7,7' });
      expect((twice.body as { settle: SettleAnswer }).settle).toEqual({ outcomes: ['settled', 'already-settled'], charged: 7, capped: false });
      expect(await used(app, { 'x-api-key': 'key-c' })).toBe(7);
      const big = await post(app, '/chat', { 'x-api-key': 'key-d', 'x-actual': '5000' });
      expect((big.body as { settle: SettleAnswer }).settle).toEqual({ outcomes: ['settled'], charged: 100, capped: true });
      expect(await used(app, { 'x-api-key': 'key-d' })).toBe(100);
      // A request that does not settle keeps its reservation.
      await post(app, '/chat', { 'x-api-key': 'key-d' });
      expect(await used(app, { 'x-api-key': 'key-d' })).toBe(110);
    });

    it('a settle above what remains puts the caller into debt: refused (429 until the window ends) though its estimate would fit', async () => {
      const app = await start();
      const first = await post(app, '/big', { 'x-api-key': 'key-e', 'x-actual': '40' });
      expect((first.body as { settle: SettleAnswer }).settle).toEqual({ outcomes: ['settled'], charged: 40, capped: false });
      const next = await post(app, '/big', { 'x-api-key': 'key-e' });
      expect(next.status).toBe(429);
      // Paid back by the window (an hour): Retry-After points at its end, not at a refill of a few units.
      expect(Number(next.headers['retry-after'])).toBeGreaterThan(60);
      expect((await usage(app, { 'x-api-key': 'key-e' }))['POST /big']).toMatchObject([{ limit: 20, used: 20, remaining: 0 }]);
      // Another caller, and another route of the same caller, are not in debt.
      expect((await post(app, '/big', { 'x-api-key': 'key-a' })).status).toBe(200);
      expect((await post(app, '/chat', { 'x-api-key': 'key-e' })).status).toBe(200);
    });
  });
}
