// The auth-route suite every adapter runs on a real redis-server: count by outcome, an account key beside the IP, reset on success, allowList and skip.
import { type Agent, request as httpRequest } from 'node:http';
import { RedisStore, type HttpRateLimitOptions } from '@floodgate/core';
import { pollUntil } from '@floodgate/testing';
import type { AdapterHarness, RunningApp } from './harness';
import { quietLogger, useRedisSuite } from './requests';

interface Answer {
  status: number;
  remaining: string | undefined;
}

function post(agent: Agent, port: number, path: string, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method: 'POST', headers, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, remaining: res.headers['ratelimit-remaining'] as string | undefined }));
    });
    req.on('error', reject);
    req.end();
  });
}

const FAILED = { 'x-status': '401' };
const OK = { 'x-status': '200' };

/**
 * Login-shaped routes through `h`: POST /login answers the status the request asks for
 * (`x-status`), so each test says which attempts fail. Figures print as `auth | <framework> | ...`.
 */
export function runAuthRouteSuite(h: AdapterHarness): void {
  describe(`auth routes through ${h.name} (real Redis)`, () => {
    const suite = useRedisSuite();

    /** An app-level limiter on a fresh prefix, with `login` as POST /login's own options and a plain POST /other. */
    async function start(login: HttpRateLimitOptions<any>, global: HttpRateLimitOptions<any> = {}): Promise<RunningApp> {
      const store = new RedisStore({ client: suite().client, timeoutMs: 5_000 });
      const prefix = `auth${Math.random().toString(36).slice(2, 10)}`;
      const app = await h.start({
        options: { logger: quietLogger, store, prefix, limit: 1_000, ...global },
        routes: [
          { method: 'POST', path: '/login', options: login },
          { method: 'POST', path: '/other' },
        ],
        trustProxy: true,
        statusFromHeader: true,
      });
      suite().apps.push(app);
      return app;
    }

    it("countOnly 'failed': 20 successes in a row all pass; failures are limited", async () => {
      const app = await start({ limit: 3, windowMs: '1h', countOnly: 'failed' });
      const ok: number[] = [];
      for (let i = 0; i < 20; i++) ok.push((await post(suite().agent, app.port, '/login', OK)).status);
      const failed: number[] = [];
      for (let i = 0; i < 5; i++) failed.push((await post(suite().agent, app.port, '/login', FAILED)).status);
      console.log(`auth | ${h.name} | countOnly failed: 20 successes -> ${ok.filter((s) => s === 200).length} x 200; then failures: ${failed.join(', ')}`);
      expect(ok).toEqual(Array(20).fill(200));
      // A success's unit is given back when its response finishes; a failure's stays.
      expect(failed.slice(0, 3).every((s) => s === 401)).toBe(true);
      expect(failed.slice(3)).toEqual([429, 429]);
    });

    it('N concurrent attempts of which K fail leave exactly K units charged', async () => {
      const app = await start({ limit: 100, windowMs: '1h', countOnly: 'failed' });
      const N = 30;
      const K = 11;
      const answers = await Promise.all(Array.from({ length: N }, (_, i) => post(suite().agent, app.port, '/login', i < K ? FAILED : OK)));
      expect(answers.filter((a) => a.status === 401)).toHaveLength(K);
      // A success charges 1 when decided and gives it back when it finishes: wait for the refunds to land.
      let remaining = '';
      await pollUntil(
        async () => {
          remaining = (await post(suite().agent, app.port, '/login', OK)).remaining ?? '';
          return remaining === String(100 - K - 1) ? true : undefined;
        },
        { timeoutMs: 5_000, intervalMs: 50, what: `remaining ${100 - K - 1} once the successes' refunds land` },
      );
      console.log(`auth | ${h.name} | ${N} concurrent attempts, ${K} failed: remaining ${remaining} of 100 (the reading request's own unit included)`);
      expect(remaining).toBe(String(100 - K - 1));
    });

    it('counts failures per account beside per IP: one account guessed from many IPs is refused; another is not', async () => {
      const app = await start({
        limit: 10,
        windowMs: '1h',
        countOnly: 'failed',
        extraKeys: [{ name: 'account', key: (req: { headers: Record<string, unknown> }) => req.headers['x-account'] as string | undefined, limit: 3, windowMs: '15m' }],
        resetOnSuccess: ['account'],
      });
      const guess = (account: string, ip: string, headers = FAILED) =>
        post(suite().agent, app.port, '/login', { ...headers, 'x-account': account, 'x-forwarded-for': ip }).then((a) => a.status);
      const fromManyIps: number[] = [];
      for (let i = 0; i < 5; i++) fromManyIps.push(await guess('victim', `198.51.100.${i + 1}`));
      const other = await guess('bystander', '198.51.100.1');
      console.log(`auth | ${h.name} | one account from 5 IPs: ${fromManyIps.join(', ')}; another account from one of them: ${other}`);
      expect(fromManyIps).toEqual([401, 401, 401, 429, 429]);
      expect(other).toBe(401);
      // The refusal by the account gave the IPs their units back: 198.51.100.5 was charged nothing.
      // A success clears the account it names (resetOnSuccess).
      expect(await guess('carol', '203.0.113.5')).toBe(401);
      expect(await guess('carol', '203.0.113.5')).toBe(401);
      expect(await guess('carol', '203.0.113.5', OK)).toBe(200);
      await new Promise((r) => setTimeout(r, 200)); // the reset is a store call of its own
      expect([await guess('carol', '203.0.113.6'), await guess('carol', '203.0.113.7'), await guess('carol', '203.0.113.8'), await guess('carol', '203.0.113.9')]).toEqual([401, 401, 401, 429]);
    });

    it('answers 400 to an account name the client made an array, object, null, boolean or very long string, and counts a number as its account (issue 40, row 8)', async () => {
      // The key reads the account from x-account as JSON: what a JSON body parser hands the key
      // function for {"username": ["victim"]} and the like, without a body parser in every harness.
      const fromJson = (value: unknown) => {
        try {
          return typeof value === 'string' ? (JSON.parse(value) as unknown) : undefined;
        } catch {
          return undefined;
        }
      };
      const app = await start({
        limit: 100,
        windowMs: '1h',
        countOnly: 'failed',
        extraKeys: [{ name: 'account', key: (req: { headers: Record<string, unknown> }) => fromJson(req.headers['x-account']), limit: 3, windowMs: '15m' }],
      });
      const guess = (account: unknown, ip: string) =>
        post(suite().agent, app.port, '/login', { ...FAILED, 'x-account': JSON.stringify(account), 'x-forwarded-for': ip }).then((a) => a.status);
      const hostile: unknown[] = [['victim'], [['victim']], { username: 'victim' }, null, true, 'v'.repeat(1_025)];
      const statuses: number[] = [];
      for (const [i, value] of hostile.entries()) statuses.push(await guess(value, `198.51.100.${i + 1}`));
      const numbers = [await guess(42, '198.51.100.11'), await guess('42', '198.51.100.12'), await guess(42, '198.51.100.13'), await guess(42, '198.51.100.14')];
      console.log(`auth | ${h.name} | non-string account names (array, nested array, object, null, boolean, 1025 chars): ${statuses.join(', ')}; 42, '42', 42, 42: ${numbers.join(', ')}`);
      // Before: each reached the handler (401) with the per-account key skipped.
      expect(statuses).toEqual(hostile.map(() => 400));
      expect(numbers).toEqual([401, 401, 401, 429]);
    });

    it('never counts or refuses an allowlisted address, app-wide or per route, nor a request skip() exempts', async () => {
      const app = await start({ limit: 1, skip: (req: { headers: Record<string, unknown> }) => req.headers['x-probe'] === 'internal-secret' }, { allowList: ['203.0.113.0/24'] });
      const listed: number[] = [];
      for (let i = 0; i < 5; i++) listed.push((await post(suite().agent, app.port, '/login', { ...FAILED, 'x-forwarded-for': '203.0.113.77' })).status);
      expect(listed).toEqual(Array(5).fill(401));
      const skipped: number[] = [];
      for (let i = 0; i < 5; i++) skipped.push((await post(suite().agent, app.port, '/login', { ...OK, 'x-forwarded-for': '192.0.2.1', 'x-probe': 'internal-secret' })).status);
      expect(skipped).toEqual(Array(5).fill(200));
      const others = [await post(suite().agent, app.port, '/login', { ...OK, 'x-forwarded-for': '192.0.2.1' }), await post(suite().agent, app.port, '/login', { ...OK, 'x-forwarded-for': '192.0.2.1' })];
      expect(others.map((a) => a.status)).toEqual([200, 429]);
    });
  });
}
