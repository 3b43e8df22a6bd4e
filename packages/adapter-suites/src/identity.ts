// Identity through a real framework: trust-proxy, /64 rotation, IPv4-mapped addresses, and cheap rejections counted in Redis.
import { Agent } from 'node:http';
import { MemoryStore, RedisStore, type HttpRateLimitOptions, type ResolvedKey } from '@floodgate/core';
import type { Redis } from 'ioredis';
import { sleep, startRedis, type RedisServer } from '@floodgate/testing';
import type { AdapterHarness, RunningApp } from './harness';
import { count, exactly, get, sendAll, startOnR } from './requests';

const hex = () => Math.floor(Math.random() * 0x10000).toString(16);

/**
 * Redis calls between two INFO commandstats readings: `commands` counts every command Redis ran
 * (the commands a script runs included) except the INFO that reads them; `scripts` counts round
 * trips that ran a script (EVALSHA, EVAL).
 */
function storeCalls(before: Record<string, number>, after: Record<string, number>): { commands: number; scripts: number } {
  let commands = 0;
  for (const [name, calls] of Object.entries(after)) if (name !== 'info') commands += calls - (before[name] ?? 0);
  const scripts = ['evalsha', 'eval'].reduce((n, name) => n + (after[name] ?? 0) - (before[name] ?? 0), 0);
  return { commands, scripts };
}

/**
 * Runs the identity tests against `h` (app-level limiter, GET /r). `floodTests: false` leaves out the
 * Redis flood tests (about 1,300 requests on the test clock): they exercise core, not routing,
 * so once per framework is enough (Express 5, not again on Express 4).
 */
export function runIdentitySuite(h: AdapterHarness, { floodTests = true }: { floodTests?: boolean } = {}): void {
  describe(`identity through ${h.name}`, () => {
    let agent: Agent;
    const apps: RunningApp[] = [];
    const start = async (options: HttpRateLimitOptions, trustProxy: boolean) => {
      const app = await startOnR(h, options, trustProxy);
      apps.push(app);
      return app;
    };

    beforeAll(() => {
      agent = new Agent({ keepAlive: true, maxSockets: 25 });
    });
    afterAll(async () => {
      agent.destroy();
      await Promise.all(apps.map((a) => a.close()));
    });

    it('puts an attacker rotating through 1,000 addresses of one /64 (via a trusted proxy) in one bucket', async () => {
      const reasons = new Map<string, number>();
      const onDecision = (e: { decision: { reason: string } }) => void reasons.set(e.decision.reason, (reasons.get(e.decision.reason) ?? 0) + 1);
      const app = await start({ store: new MemoryStore(), ...exactly(50), onDecision }, true);
      const rotating = Array.from({ length: 1_000 }, () => ({ 'x-forwarded-for': `2001:db8:aaaa:1:${hex()}:${hex()}:${hex()}:${hex()}` }));
      expect(new Set(rotating.map((r) => r['x-forwarded-for'])).size).toBeGreaterThan(990);
      const statuses = await sendAll(agent, app.port, rotating);
      expect(Object.fromEntries(reasons)).toEqual({ allowed: 50, limited: expect.any(Number), blocked: expect.any(Number) });
      expect(count(statuses, 200)).toBe(50);
      expect(count(statuses, 429)).toBe(950);
      // The proxy's header is honoured: another /64 (another subscriber) has its own bucket.
      expect(await get(agent, app.port, { 'x-forwarded-for': '2001:db8:aaaa:2::1' })).toBe(200);
    });

    it('gives two different /64s two buckets, however each address is written', async () => {
      const app = await start({ store: new MemoryStore(), ...exactly(3) }, true);
      const a = ['2001:db8:1:1::1', '2001:0DB8:0001:0001:0000:0000:0000:0002', '[2001:db8:1:1::3]', '2001:db8:1:1:ffff::4'];
      expect(await sendAll(agent, app.port, a.map((ip) => ({ 'x-forwarded-for': ip })), 1)).toEqual([200, 200, 200, 429]);
      expect(await sendAll(agent, app.port, ['2001:db8:1:2::1', '2001:db8:1:2::2', '2001:db8:1:2::3'].map((ip) => ({ 'x-forwarded-for': ip })), 1)).toEqual([200, 200, 200]);
    });

    it('counts ::ffff:10.0.0.1 and 10.0.0.1 as one caller', async () => {
      const app = await start({ store: new MemoryStore(), ...exactly(2) }, true);
      const xff = (ip: string) => ({ 'x-forwarded-for': ip });
      expect(await sendAll(agent, app.port, [xff('::ffff:10.0.0.1'), xff('10.0.0.1'), xff('::FFFF:10.0.0.1'), xff('10.0.0.1')], 1)).toEqual([200, 200, 429, 429]);
      expect(await get(agent, app.port, xff('10.0.0.2'))).toBe(200);
    });

    it('ignores X-Forwarded-For when the app does not trust a proxy', async () => {
      const app = await start({ store: new MemoryStore(), ...exactly(3) }, false);
      const spoofed = Array.from({ length: 6 }, (_, i) => ({ 'x-forwarded-for': `198.51.100.${i + 1}`, forwarded: `for=198.51.100.${i + 1}` }));
      expect(await sendAll(agent, app.port, spoofed, 1)).toEqual([200, 200, 200, 429, 429, 429]);
    });

    it('keys on a verified API key first, through Authorization: Bearer and x-api-key, whatever the IP', async () => {
      const resolveKey = (key: string) => (key === 'k1' || key === 'k2' ? { account: key } : null);
      const app = await start({ store: new MemoryStore(), ...exactly(2), resolveKey }, true);
      const statuses = await sendAll(
        agent,
        app.port,
        [
          { authorization: 'Bearer k1', 'x-forwarded-for': '203.0.113.1' },
          { 'x-api-key': 'k1', 'x-forwarded-for': '203.0.113.2' },
          { authorization: 'Bearer k1', 'x-forwarded-for': '203.0.113.3' },
          { authorization: 'Bearer k2', 'x-forwarded-for': '203.0.113.3' },
        ],
        1,
      );
      expect(statuses).toEqual([200, 200, 429, 200]);
    });

    it('calls resolveKey once for a burst of concurrent first requests with one unknown key', async () => {
      let lookups = 0;
      const resolveKey = async (): Promise<ResolvedKey | null> => {
        lookups++;
        await sleep(50);
        return null;
      };
      const app = await start({ store: new MemoryStore(), ...exactly(1_000), resolveKey }, true);
      const statuses = await sendAll(agent, app.port, Array.from({ length: 100 }, () => ({ 'x-api-key': 'never-issued', 'x-forwarded-for': '203.0.113.9' })), 25);
      expect(count(statuses, 200)).toBe(100);
      expect(lookups).toBe(1);
    });

    it("answers 401 to an unknown key with unknownKey 'reject', without a lookup per request", async () => {
      const lookups: string[] = [];
      const app = await start(
        { store: new MemoryStore(), ...exactly(5), resolveKey: async (key) => (lookups.push(key), key === 'good' ? { account: 1 } : null), unknownKey: 'reject' },
        true,
      );
      const statuses = await sendAll(agent, app.port, [{ 'x-api-key': 'bad' }, { 'x-api-key': 'bad' }, { 'x-api-key': 'good' }, {}], 1);
      expect(statuses).toEqual([401, 401, 200, 200]);
      expect(lookups).toEqual(['bad', 'good']);
    });

    it("trusts only the header unverifiedKeys names: an invented Bearer beside the gateway's X-Api-Key buys no bucket (issue 40, row 5)", async () => {
      const app = await start({ store: new MemoryStore(), ...exactly(3), unverifiedKeys: { trust: 'x-api-key' } }, false);
      const requests = Array.from({ length: 6 }, (_, i) => ({ 'x-api-key': 'verified-account-1', authorization: `Bearer invented-${i}-${hex()}` }));
      const statuses = await sendAll(agent, app.port, requests, 1);
      console.log(`${h.name}: 6 requests, one gateway-verified x-api-key, a fresh invented Bearer each, limit 3: ${count(statuses, 200)} admitted`);
      expect(statuses).toEqual([200, 200, 200, 429, 429, 429]);
      // The bare 'trust' is ambiguous beside two key headers: refused when the app is built.
      await expect(start({ store: new MemoryStore(), unverifiedKeys: 'trust' }, false)).rejects.toMatchObject({ code: 'FG_INVALID_OPTION', option: 'unverifiedKeys' });
    });

    it('answers a request at once when keyCache.maxInFlight lookups hang, by its IP (issue 40, row 6)', async () => {
      let calls = 0;
      let twoCalled!: () => void;
      const bothHanging = new Promise<void>((resolve) => (twoCalled = resolve));
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      const resolveKey = async (): Promise<ResolvedKey | null> => {
        if (++calls === 2) twoCalled();
        await released;
        return null;
      };
      const app = await start({ store: new MemoryStore(), ...exactly(5), resolveKey, resolveTimeoutMs: '1m', keyCache: { maxInFlight: 2 } }, true);
      const hanging = [get(agent, app.port, { 'x-api-key': 'hang-1', 'x-forwarded-for': '203.0.113.61' }), get(agent, app.port, { 'x-api-key': 'hang-2', 'x-forwarded-for': '203.0.113.62' })];
      await bothHanging;
      // A third key while both slots hang: no lookup, no wait; counted against its IP.
      const third = await sendAll(agent, app.port, Array.from({ length: 7 }, (_, i) => ({ 'x-api-key': `new-${i}`, 'x-forwarded-for': '203.0.113.63' })), 1);
      expect(calls).toBe(2);
      expect(third).toEqual([200, 200, 200, 200, 200, 429, 429]);
      release();
      expect(await Promise.all(hanging)).toEqual([200, 200]);
    });

    it('spends the IP\'s lookup budget on keys answered unknown before: one IP re-sending 100 of them costs at most 10 lookups (issue 40, row 6)', async () => {
      const lookups: string[] = [];
      const resolveKey = async (key: string): Promise<ResolvedKey | null> => (lookups.push(key), null);
      // A limit of 50: the IP is not blocked before its budget is spent (a blocked IP costs no lookup anyway).
      const app = await start({ store: new MemoryStore(), ...exactly(50), resolveKey, keyCache: { unknownTtlMs: 1 } }, true);
      const keys = Array.from({ length: 100 }, (_, i) => `known-bad-${i}-${hex()}`);
      // Each key answered unknown once, each from its own IP.
      await sendAll(agent, app.port, keys.map((k, i) => ({ 'x-api-key': k, 'x-forwarded-for': `198.18.${i >> 8}.${i & 255}` })), 1);
      expect(lookups).toHaveLength(100);
      await sleep(5); // their 1 ms answers expire (they stay remembered)
      const statuses = await sendAll(agent, app.port, keys.map((k) => ({ 'x-api-key': k, 'x-forwarded-for': '203.0.113.64' })), 1);
      console.log(`${h.name}: one IP re-sending 100 keys answered unknown before: ${lookups.length - 100} lookups (lookupsPerIp 10), ${count(statuses, 200)} admitted (limit 50)`);
      expect(lookups.length - 100).toBeLessThanOrEqual(10);
      expect(count(statuses, 200)).toBe(50);
    });

    if (floodTests) describe('a denied caller is answered locally until its block expires (real Redis)', () => {
      let redis: RedisServer;
      let client: Redis;
      beforeAll(async () => {
        redis = await startRedis();
        client = redis.client({ autoResendUnfulfilledCommands: false });
      }, 30_000);
      afterAll(async () => {
        client?.disconnect();
        await redis?.stop();
      });

      // gcra with burst 5 and one unit per 6 s: after 5 requests the caller is denied for ~6 s.
      const BLOCK_MS = 6_000;
      const FLOOD = 400;
      const limits = { algorithm: 'gcra' as const, burst: 5, refillPerSecond: 1_000 / BLOCK_MS };

      /** The key cache's TTL in the API-key flood: a flood that outlasts it would redo an expired lookup if the order of checks were wrong. */
      const KEY_CACHE_TTL_MS = 300;

      /**
       * One clock for the limiter's local caches (block cache, key cache: `clock`) and the store's
       * scripts (`UNSAFE_testClock`), moved only by the test: the block lasts BLOCK_MS of this
       * clock however long the machine takes, so every request of the flood is inside it, and it
       * is over when the test says so, without waiting for it.
       */
      function testClock() {
        const epoch = Date.now();
        let ms = 1_000_000;
        return { now: () => ms, store: () => epoch + ms, advance: (by: number) => void (ms += by) };
      }

      /**
       * Five admitted, one denied, then FLOOD more in 8 batches 150 ms of the test clock apart
       * (past the key cache's TTL), then one after the block. Redis calls and resolveKey calls
       * during the flood, how many it sent and how many were denied, and when (test clock) the
       * last batch started. Then the status of a request after the block.
       */
      async function flood(options: HttpRateLimitOptions, headers: Record<string, string>, lookups: () => number) {
        const prefix = `id${Math.random().toString(36).slice(2, 10)}`;
        const clock = testClock();
        // A fixed `instances`: these tests count every Redis command, and a learned count's announcements are commands too.
        const store = new RedisStore({ client, timeoutMs: 30_000, UNSAFE_testClock: clock.store });
        const app = await start({ store, clock: clock.now, prefix, instances: 1, ...limits, ...options }, true);
        const first = await sendAll(agent, app.port, Array.from({ length: 6 }, () => headers), 1);
        const deniedAt = clock.now();
        expect(first).toEqual([200, 200, 200, 200, 200, 429]);
        const before = await redis.commandStats();
        const lookupsBefore = lookups();
        const counted = { sent: 0, denied: 0, lastBatchAfterMs: 0 };
        for (let batch = 0; batch < 8; batch++) {
          counted.lastBatchAfterMs = clock.now() - deniedAt;
          const statuses = await sendAll(agent, app.port, Array.from({ length: FLOOD / 8 }, () => headers));
          counted.sent += statuses.length;
          counted.denied += count(statuses, 429);
          clock.advance(150);
        }
        const after = await redis.commandStats();
        const during = { redisCalls: storeCalls(before, after).commands, lookups: lookups() - lookupsBefore };
        // Past the block (plus a margin), the caller is admitted again, by Redis.
        clock.advance(BLOCK_MS + 500 - (clock.now() - deniedAt));
        const again = await get(agent, app.port, headers);
        const afterBlock = storeCalls(after, await redis.commandStats()).scripts;
        return { ...counted, ...during, floodMs: clock.now() - deniedAt, again, afterBlock };
      }

      it('makes no Redis call and no resolveKey call during a flood from a denied API key, and admits it after', async () => {
        let lookups = 0;
        const resolveKey = async () => (lookups++, { account: 'acct' });
        const out = await flood({ resolveKey, keyCache: { ttlMs: KEY_CACHE_TTL_MS } }, { authorization: 'Bearer flood-key', 'x-forwarded-for': '203.0.113.50' }, () => lookups);
        console.log(`${h.name}: flood of ${out.sent} from a denied API key over ${Math.round(out.floodMs)} ms of the test clock (with block cache + cached resolveKey): ${out.redisCalls} Redis calls, ${out.lookups} resolveKey calls`);
        // Counted requests were still sent after the key cache's entry expired.
        expect(out.lastBatchAfterMs).toBeGreaterThan(KEY_CACHE_TTL_MS);
        expect(out.sent).toBe(FLOOD);
        expect(out.denied).toBe(out.sent);
        expect(out.redisCalls).toBe(0);
        expect(out.lookups).toBe(0);
        expect(out.again).toBe(200);
        expect(out.afterBlock).toBeGreaterThanOrEqual(1);
      }, 30_000);

      it('makes no Redis call during a flood from a denied IP', async () => {
        const out = await flood({}, { 'x-forwarded-for': '2001:db8:50::1' }, () => 0);
        expect(out.lastBatchAfterMs).toBeGreaterThan(KEY_CACHE_TTL_MS);
        expect(out.sent).toBe(FLOOD);
        expect(out.denied).toBe(out.sent);
        expect(out.redisCalls).toBe(0);
        expect(out.again).toBe(200);
      }, 30_000);

      it('baseline: without the block cache and with no lookup cache, every request of the flood costs a Redis call and a lookup', async () => {
        let lookups = 0;
        const resolveKey = async () => (lookups++, { account: 'acct' });
        // No lookup cache: a 1 ms TTL, and requests sent one at a time so none share a lookup in flight.
        const prefix = `id${Math.random().toString(36).slice(2, 10)}`;
        // One unit an hour, not one per BLOCK_MS: 400 requests 2 ms of the test clock apart must not
        // reach a refilled unit, an admission.
        const clock = testClock();
        const store = new RedisStore({ client, timeoutMs: 30_000, UNSAFE_testClock: clock.store });
        const app = await start({ store, clock: clock.now, prefix, instances: 1, ...limits, refillPerSecond: 1 / 3_600, resolveKey, keyCache: { ttlMs: 1, unknownTtlMs: 1 }, blockCacheSize: 0 }, true);
        const headers = { authorization: 'Bearer flood-key', 'x-forwarded-for': '203.0.113.51' };
        expect(await sendAll(agent, app.port, Array.from({ length: 6 }, () => headers), 1)).toEqual([200, 200, 200, 200, 200, 429]);
        const before = await redis.commandStats();
        const lookupsBefore = lookups;
        const statuses: number[] = [];
        for (let i = 0; i < FLOOD; i++) {
          clock.advance(2); // so that each request finds the 1 ms lookup cache expired
          statuses.push(await get(agent, app.port, headers));
        }
        const calls = storeCalls(before, await redis.commandStats());
        console.log(`${h.name}: baseline flood of ${FLOOD} from a denied API key (blockCacheSize 0, no lookup cache): ${calls.scripts} Redis round trips (EVALSHA), ${calls.commands} Redis commands in all, ${lookups - lookupsBefore} resolveKey calls`);
        expect(count(statuses, 429)).toBe(FLOOD);
        expect(calls.scripts).toBe(FLOOD);
        expect(lookups - lookupsBefore).toBe(FLOOD);
      }, 60_000);
    });
  });
}
