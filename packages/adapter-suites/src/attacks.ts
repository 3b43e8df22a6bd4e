// The attack suite every adapter runs on a real redis-server: what a hostile client sends under default options, and what it gets.
import { RedisStore, type HttpRateLimitOptions } from '@floodgate/core';
import type { AdapterHarness, RunningApp } from './harness';
import { count, exactly, get, sendAll, startOnR, useRedisSuite } from './requests';

const LIMIT = 5;
const uid = () => Math.random().toString(36).slice(2, 12);
/** A fresh invented credential, alternating the two headers Floodgate reads by default. */
const invented = (i: number): Record<string, string> => (i % 2 ? { 'x-api-key': `made-up-${uid()}` } : { authorization: `Bearer made-up-${uid()}` });

/**
 * Runs the attacks against `h`'s app (app-wide limiter, GET /r) on a real Redis. Each prints its
 * figure (`attack | framework | ...`) for docs/security.md and the closing notes.
 */
export function runAttackSuite(h: AdapterHarness): void {
  describe(`attacks through ${h.name} (real Redis)`, () => {
    const suite = useRedisSuite();

    /** An app on the real Redis with its own prefix and exactly LIMIT per caller (no window edge in a test). */
    async function start(options: HttpRateLimitOptions, trustProxy: boolean): Promise<RunningApp> {
      const store = new RedisStore({ client: suite().client, timeoutMs: 5_000 });
      const app = await startOnR(h, { store, prefix: `atk${uid()}`, ...exactly(LIMIT), ...options }, trustProxy);
      suite().apps.push(app);
      return app;
    }
    const report = (attack: string, figure: string) => console.log(`attack | ${h.name} | ${attack}: ${figure}`);

    it('a fresh invented API key per request buys no budget: one IP gets its limit, under default options', async () => {
      const app = await start({}, false);
      const statuses = await sendAll(suite().agent, app.port, Array.from({ length: 40 }, (_, i) => invented(i)), 1);
      report('invented-key rotation, default options', `${count(statuses, 200)} of 40 admitted (limit ${LIMIT})`);
      expect(count(statuses, 200)).toBe(LIMIT);
      expect(count(statuses, 429)).toBe(40 - LIMIT);
    });

    it('with resolveKey, invented keys fall back to the IP, and a blocked IP costs no lookup whatever keys it sends', async () => {
      let lookups = 0;
      const resolveKey = async (key: string) => (lookups++, key === 'issued' ? { account: 'a' } : null);
      const app = await start({ resolveKey }, true);
      const ip = { 'x-forwarded-for': '203.0.113.70' };
      // Concurrent invented keys from an IP not yet blocked: bounded by the IP's lookup budget and its limit.
      const first = await sendAll(suite().agent, app.port, Array.from({ length: 100 }, (_, i) => ({ ...ip, ...invented(i) })), 25);
      const lookupsBeforeBlock = lookups;
      // The IP is blocked now: 300 more fresh keys.
      const flood = await sendAll(suite().agent, app.port, Array.from({ length: 300 }, (_, i) => ({ ...ip, ...invented(i) })), 25);
      const floodLookups = lookups - lookupsBeforeBlock;
      report('invented keys with resolveKey', `${count(first, 200)} of 100 admitted, ${lookupsBeforeBlock} lookups (budget 10)`);
      report('fresh-key flood from a blocked IP', `${floodLookups} lookups for 300 requests, ${count(flood, 429)} answered 429`);
      expect(count(first, 200)).toBe(LIMIT);
      expect(lookupsBeforeBlock).toBeLessThanOrEqual(10);
      expect(count(flood, 429)).toBe(300);
      expect(floodLookups).toBeLessThanOrEqual(10);
      expect(floodLookups).toBe(0);
      // An issued key from another IP is still looked up and gets its own bucket.
      expect(await get(suite().agent, app.port, { 'x-forwarded-for': '203.0.113.71', 'x-api-key': 'issued' })).toBe(200);
    });

    it("counts unknown-key 401s against the IP: past its limit the answer is 429, and lookups stay bounded", async () => {
      let lookups = 0;
      const resolveKey = async () => (lookups++, null);
      const app = await start({ resolveKey, unknownKey: 'reject' }, true);
      const statuses = await sendAll(suite().agent, app.port, Array.from({ length: 300 }, (_, i) => ({ 'x-forwarded-for': '203.0.113.80', ...invented(i) })), 25);
      report('unknown-key 401 flood', `${count(statuses, 401)} x 401, ${count(statuses, 429)} x 429, ${lookups} lookups for 300 requests`);
      expect(count(statuses, 401)).toBe(LIMIT);
      expect(count(statuses, 429)).toBe(300 - LIMIT);
      expect(lookups).toBeLessThanOrEqual(10);
    });

    it('an attacker rotating addresses inside one IPv6 /64 is one caller', async () => {
      const app = await start({}, true);
      const rotating = Array.from({ length: 200 }, (_, i) => ({ 'x-forwarded-for': `2001:db8:77:1:${(i + 1).toString(16)}::${Math.floor(Math.random() * 0x10000).toString(16)}` }));
      const statuses = await sendAll(suite().agent, app.port, rotating, 25);
      report('IPv6 rotation inside a /64', `${count(statuses, 200)} of 200 admitted`);
      expect(count(statuses, 200)).toBe(LIMIT);
    });

    it('X-Forwarded-For from a client is ignored when no proxy is trusted', async () => {
      const app = await start({}, false);
      const spoofed = Array.from({ length: 40 }, (_, i) => ({ 'x-forwarded-for': `198.51.100.${i + 1}`, forwarded: `for=198.51.100.${i + 1}` }));
      const statuses = await sendAll(suite().agent, app.port, spoofed, 25);
      report('X-Forwarded-For rotation, no trusted proxy', `${count(statuses, 200)} of 40 admitted`);
      expect(count(statuses, 200)).toBe(LIMIT);
    });

    it.each([
      ['max', 3, 'limit'],
      ['windowMS', 60_000, 'windowMs'],
      ['limt', 3, 'limit'],
      ['failmode', 'closed', 'failMode'],
    ])('refuses the misspelled or foreign option `%s` at construction, naming the one it meant', async (name, value, meant) => {
      const attempt = startOnR(h, { [name]: value } as HttpRateLimitOptions, false).then((app) => (suite().apps.push(app), app));
      await expect(attempt).rejects.toMatchObject({ code: 'FG_UNKNOWN_OPTION', option: name, message: expect.stringContaining(`did you mean \`${meant}\`?`) });
    });
  });
}
