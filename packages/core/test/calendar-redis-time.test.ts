// Calendar windows under the real Redis TIME (no test clock): the script picks the period by its own clock among the boundaries sent, and a period ends at the instant the boundary says, on Redis and on the twin alike.
import { startRedis, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import { createLimiter, MemoryStore, RedisStore, type Store, type StoreLimit, type StoreRequest, type StoreResult } from '../src';
import { encodeCall, parseReply, resolveLimits, runScript, type SendCommand } from '../src/internal';

let server: RedisServer;
let client: Redis;
const prefix = `cal-${Math.random().toString(36).slice(2, 10)}`;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

beforeAll(async () => {
  server = await startRedis();
  client = server.client({ autoResendUnfulfilledCommands: false });
}, 30_000);

afterAll(async () => {
  client?.disconnect();
  await server?.stop();
});

const send: SendCommand = (command, args) => client.call(command, ...args.map(String)) as Promise<unknown>;

const daily = (timeZone: string): StoreLimit => resolveLimits([{ name: 'q', limit: 5, window: { every: 'day', timeZone } }])[0].store;

describe('the script picks the period by Redis TIME', () => {
  // The application's clock a day behind, on time, and a day ahead: the boundaries sent differ, the period picked does not.
  it.each([
    ['a day behind', -DAY],
    ['on time', 0],
    ['a day ahead', DAY],
  ])('with the application clock %s, the period holding TIME is charged, with its real reset, as the twin decides at that instant', async (_label, skew) => {
    for (const timeZone of ['Asia/Kolkata', 'America/New_York']) {
      const limit = daily(timeZone);
      const key = `${prefix}:{${timeZone}${skew}}:q.fw`;
      const request: StoreRequest = { keys: [key], limits: [limit], cost: 2, mode: 'consume' };
      const call = encodeCall([request], undefined, Date.now() + skew);
      // The call carries boundaries around the skewed clock, and no test clock: the script reads TIME
      // (a one-decision call: capacity, boundaries, cost 2, and no fourth ARGV, the test clock's place).
      expect(call.script.name).toBe('fixed-window/one');
      expect(call.argv).toHaveLength(3);
      expect(typeof call.argv[1]).toBe('string');
      const [result] = parseReply(await runScript(send, call, () => false), call) as StoreResult[];
      const wall = Date.now();
      expect(Math.abs(result.at - wall)).toBeLessThan(5_000);
      // The period holding Redis's own clock, from the time-zone database.
      if (!('calendar' in limit) || !limit.calendar) throw new Error('not a calendar window');
      const [, start, end] = limit.calendar.around(result.at).boundaries;
      expect(start <= result.at && result.at < end).toBe(true);
      expect(result.results[0]).toEqual({ allowed: true, remaining: 3, resetMs: end - result.at, retryAfterMs: 0 });
      expect(await client.hget(key, 'w')).toBe(String(start));
      const ttl = await client.pttl(key);
      expect(ttl).toBeGreaterThan(end - result.at - 5_000);
      expect(ttl).toBeLessThanOrEqual(end - result.at);
      // The twin at the instant Redis decided: the same figures.
      const twin = new MemoryStore({ clock: () => result.at }).evaluateSync(request);
      expect(twin.results).toEqual(result.results);
    }
  });

  it('refuses to guess when the application and Redis clocks are more than a period apart: the call fails, nothing is written', async () => {
    const key = `${prefix}:{skewed}:q.fw`;
    const request: StoreRequest = { keys: [key], limits: [daily('Asia/Kolkata')], cost: 1, mode: 'consume' };
    const call = encodeCall([request], undefined, Date.now() - 3 * DAY);
    await expect(runScript(send, call, () => false)).rejects.toThrow(/outside the calendar periods/);
    expect(await client.exists(key)).toBe(0);
  });
});

const stores: [string, () => Store][] = [
  ['RedisStore (Redis TIME)', () => new RedisStore({ client, timeoutMs: 5_000 })],
  ['MemoryStore (the twin, Date.now)', () => new MemoryStore()],
];

describe.each(stores)('a period ends at the instant its boundary says, on %s', (_label, makeStore) => {
  it('a daily window anchored 2 s from now in America/New_York: denied until the boundary, admitted after it, into a period a day long', async () => {
    // A boundary in the real near future: the anchor's time of day, to the second.
    const boundary = Math.ceil((Date.now() + 2_000) / 1000) * 1000;
    const l = createLimiter({
      store: makeStore(),
      prefix: `${prefix}-near`,
      blockCacheSize: 0,
      failMode: 'closed',
      limit: 2,
      window: { every: 'day', timeZone: 'America/New_York', anchor: new Date(boundary) },
    });
    const subject = `s-${Math.random()}`;
    const first = await l.consume(subject);
    expect(first).toMatchObject({ allowed: true, remaining: 1, degraded: false });
    expect(first.at! + first.resetMs!).toBe(boundary);
    await l.consume(subject);
    const before = Date.now();
    const denied = await l.consume(subject);
    expect(denied).toMatchObject({ allowed: false, reason: 'limited' });
    // Denied until the boundary, not a moment less: the reset is the time left to it.
    expect(denied.retryAfterMs).toBe(denied.resetMs);
    expect(denied.resetMs!).toBeLessThanOrEqual(boundary - before);
    expect(denied.resetMs!).toBeGreaterThan(0);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, boundary - Date.now()) + 50));
    const after = await l.consume(subject);
    expect(after).toMatchObject({ allowed: true, remaining: 1, degraded: false });
    // The next period: the same wall time tomorrow in New York (24 hours, as no daylight-saving
    // change falls in early December; 23 or 25 around one), and the draft-10 `w` that goes with it.
    const next = after.at! + after.resetMs!;
    expect([23 * HOUR, DAY, 25 * HOUR]).toContain(next - boundary);
    expect(after.limits[0].windowMs).toBe(next - boundary);
  }, 15_000);
});
