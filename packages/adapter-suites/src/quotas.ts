// The quota suite every adapter runs, on a real Redis: a calendar window through the adapter (its real reset in the headers), and plans from resolveKey whose change keeps the usage.
import { request as httpRequest, type Agent } from 'node:http';
import { RedisStore, type HttpRateLimitOptions, type ResolvedKey } from '@floodgate/core';
import type { AdapterHarness, RunningApp } from './harness';
import { quietLogger, useRedisSuite } from './requests';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
}

function get(agent: Agent, port: number, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path: '/r', method: 'GET', headers, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * The instant a wall time names in `timeZone`, found by trying every quarter-hour offset against
 * Intl's formatting: independent of core's own conversion, so that the suite checks it.
 */
function wallInstant(timeZone: string, year: number, month: number, day: number, hour: number, minute: number): number {
  const f = new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric' });
  const want = `${month}/${day}/${year}, ${String(hour).padStart(2, '0')}:${String(minute).padStart(2, '0')}`;
  const local = Date.UTC(year, month - 1, day, hour, minute);
  for (let offset = -14 * 60; offset <= 14 * 60; offset += 15) {
    const t = local - offset * 60_000;
    if (f.format(t) === want) return t;
  }
  throw new Error(`no instant is ${want} in ${timeZone}`);
}

/** The year and month (from 1) at `ms` in `timeZone`, and its day of the month. */
function localDate(timeZone: string, ms: number): { year: number; month: number; day: number } {
  const parts = new Intl.DateTimeFormat('en-US', { timeZone, year: 'numeric', month: 'numeric', day: 'numeric' }).formatToParts(ms);
  const n = (type: string) => Number(parts.find((p) => p.type === type)!.value);
  return { year: n('year'), month: n('month'), day: n('day') };
}

const addMonths = (year: number, month: number, k: number) => ({ year: year + Math.floor((month - 1 + k) / 12), month: ((month - 1 + k) % 12 + 12) % 12 + 1 });

/** The rounding of a TTL the scripts set in whole ms (ceil) onto Redis's whole-ms clock: an expiry may land this much after its instant. */
const PEXPIRE_GRAIN_MS = 1;

/** The seconds RateLimit-Reset may say for a reset at `end`, from a request sent at `before` and answered by `after`. */
function resetSeconds(end: number, before: number, after: number): number[] {
  const out: number[] = [];
  for (let s = Math.ceil((end - after) / 1000); s <= Math.ceil((end - before) / 1000); s++) out.push(s);
  return out;
}

export function runQuotaSuite(h: AdapterHarness): void {
  describe(`${h.name}: quotas (calendar windows, plans) on Redis`, () => {
    const ctx = useRedisSuite();
    let n = 0;

    async function start(options: HttpRateLimitOptions<any>): Promise<{ app: RunningApp; prefix: string }> {
      const prefix = `q${n++}-${Math.random().toString(36).slice(2, 8)}`;
      const { client, apps } = ctx();
      const app = await h.start({
        options: { store: new RedisStore({ client, timeoutMs: 30_000 }), prefix, logger: quietLogger, headers: ['draft-6', 'draft-10'], ...options },
        routes: [{ method: 'GET', path: '/r' }],
      });
      apps.push(app);
      return { app, prefix };
    }

    it('a monthly window in America/New_York: 200, 200, then 429 whose RateLimit-Reset is the time to local midnight on the 1st; draft-10 `w` is the month\'s length', async () => {
      const zone = 'America/New_York';
      const { app } = await start({ limit: 2, window: { every: 'month', timeZone: zone } });
      const statuses: number[] = [];
      let last!: Answer;
      const before = Date.now();
      for (let i = 0; i < 3; i++) {
        last = await get(ctx().agent, app.port);
        statuses.push(last.status);
      }
      const after = Date.now();
      expect(statuses).toEqual([200, 200, 429]);
      const { year, month } = localDate(zone, before);
      const start0 = wallInstant(zone, year, month, 1, 0, 0);
      const next = addMonths(year, month, 1);
      const end = wallInstant(zone, next.year, next.month, 1, 0, 0);
      // (A run that straddles the month's end in New York would see another month: not on purpose.)
      expect(localDate(zone, after).month).toBe(month);
      expect(resetSeconds(end, before, after)).toContain(Number(last.headers['ratelimit-reset']));
      expect(last.headers['ratelimit-remaining']).toBe('0');
      expect(last.headers['ratelimit-policy']).toBe(`"default";q=2;w=${(end - start0) / 1000}`);
      const t = /"default";r=0;t=(\d+);floodgate-t-ms=(\d+)$/.exec(String(last.headers['ratelimit']));
      expect(resetSeconds(end, before, after)).toContain(Number(t?.[1]));
      // The same moment to the ms: within the second t names.
      expect(Math.ceil(Number(t?.[2]) / 1000)).toBe(Number(t?.[1]));
      expect(Number(last.headers['retry-after'])).toBeGreaterThanOrEqual(Number(last.headers['ratelimit-reset']));
    });

    it('plans from resolveKey: Basic 3 and Pro 5 a month from the billing date; a change of plan mid-month takes effect on the next request, even for a caller already refused, and keeps the usage', async () => {
      const zone = 'America/New_York';
      const plan = { current: 'basic' as 'basic' | 'pro' };
      const resolveKey = (apiKey: string): ResolvedKey | null =>
        apiKey === 'key-alice'
          ? {
              account: 'alice',
              // The same `name` on every plan: the key is the subject's and the quota's name, never the plan's.
              limits: [{ name: 'quota', limit: plan.current === 'basic' ? 3 : 5, window: { every: 'month', timeZone: zone, anchor: '2026-01-17T09:00' } }],
            }
          : null;
      // A cached answer lasts 1 ms here, so the next request reads the plan again (default: 60 s).
      const { app, prefix } = await start({ limit: 100, resolveKey, keyCache: { ttlMs: 1 } });
      const alice = { authorization: 'Bearer key-alice' };
      const call = async () => {
        await new Promise((resolve) => setTimeout(resolve, 3));
        const a = await get(ctx().agent, app.port, alice);
        return [a.status, a.headers['ratelimit-remaining']];
      };
      expect([await call(), await call(), await call(), await call()]).toEqual([
        [200, '2'],
        [200, '1'],
        [200, '0'],
        [429, '0'],
      ]);
      // Alice upgrades while refused (her denial is held in the block cache until the period ends):
      // the next request reads her plan again and is counted by Pro's limit on the same count.
      plan.current = 'pro';
      expect([await call(), await call(), await call()]).toEqual([
        [200, '1'],
        [200, '0'],
        [429, '0'],
      ]);
      plan.current = 'basic';
      expect(await call()).toEqual([429, '0']);
      // One key for alice's quota whatever her plan, with an expiry at the end of her billing period.
      const { client } = ctx();
      const [, keys] = await client.scan(0, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      expect(keys).toHaveLength(1);
      expect(keys[0]).toMatch(/:quota\.fw$/);
      const now = Date.now();
      const { year, month } = localDate(zone, now);
      const at = (k: number) => {
        const m = addMonths(year, month, k);
        return wallInstant(zone, m.year, m.month, 17, 9, 0);
      };
      const end = at(0) > now ? at(0) : at(1);
      const ttl = await client.pttl(keys[0]);
      expect(ttl).toBeGreaterThan(end - now - 10_000);
      // Not past the period's end, to the millisecond Redis can express: the script sets the TTL as
      // ceil(end - now) from TIME's microseconds, and Redis adds it to its own whole-ms clock, so the
      // expiry may land up to 1 ms after `end` (seen: 1 ms over, in a full run). A TTL of the next
      // period, or none, is still far outside.
      expect(ttl).toBeLessThanOrEqual(end - now + PEXPIRE_GRAIN_MS);
    });
  });
}
