// The in-flight limit suite every adapter runs (option `concurrency`), on a real Redis: slots held while a response runs, freed on finish and on abort.
import { request as httpRequest, type Agent, type ClientRequest } from 'node:http';
import { RedisStore, type HttpRateLimitOptions } from '@floodgate/core';
import { leasesHeld, pollUntil } from '@floodgate/testing';
import type { AdapterHarness, RunningApp } from './harness';
import { quietLogger, useRedisSuite } from './requests';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
}

/** GET /r holding the handler `delayMs`; `started` is the request, for aborting it. */
function slow(agent: Agent, port: number, delayMs: number): { started: ClientRequest; done: Promise<Answer> } {
  let started!: ClientRequest;
  const done = new Promise<Answer>((resolve, reject) => {
    started = httpRequest({ host: '127.0.0.1', port, path: '/r', method: 'GET', agent, headers: { 'x-delay': String(delayMs) } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
    });
    started.on('error', reject);
    started.end();
  });
  return { started, done };
}

export function runConcurrencySuite(h: AdapterHarness): void {
  describe(`${h.name}: in-flight limit (concurrency) on Redis`, () => {
    const ctx = useRedisSuite();
    let n = 0;

    /**
     * An app whose GET /r waits `x-delay` ms, limited to `inFlight` per caller; and the count of slots its caller holds in Redis.
     * The store's deadline is 30 s, not the default 100 ms: on a loaded machine a release past 100 ms is a
     * timeout (the slot then waits for its lease to lapse), which this suite does not test.
     */
    async function start(inFlight: number, extra: HttpRateLimitOptions<any> = {}): Promise<{ app: RunningApp; held: () => Promise<number> }> {
      const prefix = `cc${n++}-${Math.random().toString(36).slice(2, 8)}`;
      const { client, apps } = ctx();
      const app = await h.start({
        options: { store: new RedisStore({ client, timeoutMs: 30_000 }), prefix, logger: quietLogger, limit: 1000, windowMs: '1m', concurrency: { limit: inFlight }, headers: ['draft-6', 'draft-10'], ...extra },
        routes: [{ method: 'GET', path: '/r' }],
        delayFromHeader: true,
      });
      apps.push(app);
      // Members whose expiry is after Redis TIME (the lease script's clock), over every lease key of the prefix.
      const held = () => leasesHeld(client, `${prefix}:*:concurrency.cc`);
      return { app, held };
    }
    // Every 2 ms, not the default 20: the abort test waits on this 100 times, and each wait is for one request to arrive or go.
    const holding = (held: () => Promise<number>, want: number, what: string) =>
      pollUntil(async () => ((await held()) === want ? true : undefined), { timeoutMs: 30_000, intervalMs: 2, what: `${want} slots held (${what})` });

    it('admits `limit` requests in flight per caller and answers the next 429 with qu="concurrent-requests"; the rate quota is not charged for it', async () => {
      const { app, held } = await start(2);
      const a = slow(ctx().agent, app.port, 3_000);
      const b = slow(ctx().agent, app.port, 3_000);
      await holding(held, 2, 'two slow requests');
      const refused = await slow(ctx().agent, app.port, 0).done;
      expect(refused.status).toBe(429);
      expect(String(refused.headers['ratelimit-policy'])).toContain('"concurrency";q=2;qu="concurrent-requests"');
      expect(String(refused.headers['ratelimit'])).toContain('"concurrency";r=0');
      expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect((await a.done).status).toBe(200);
      expect((await b.done).status).toBe(200);
      await holding(held, 0, 'both finished');
      const next = await slow(ctx().agent, app.port, 0).done;
      expect(next.status).toBe(200);
      // 3 admitted of 1000: the refused one took nothing from the rate limit.
      expect(next.headers['ratelimit-remaining']).toBe('997');
    });

    it('frees a slot when the client aborts before the response: 100 aborted requests leave no lease', async () => {
      const { app, held } = await start(2);
      for (let round = 0; round < 50; round++) {
        const pair = [slow(ctx().agent, app.port, 5_000), slow(ctx().agent, app.port, 5_000)];
        for (const p of pair) p.done.catch(() => undefined);
        await holding(held, 2, `round ${round}: two requests in flight`);
        for (const p of pair) p.started.destroy();
        await holding(held, 0, `round ${round}: both aborted`);
      }
      const after = await slow(ctx().agent, app.port, 0).done;
      expect(after.status).toBe(200);
      expect(String(after.headers['ratelimit'])).toContain('"concurrency";r=1');
    });

    it('counts a request refused by the rate limit against no slot (all-or-nothing)', async () => {
      const { app, held } = await start(3, { limit: 1 });
      expect((await slow(ctx().agent, app.port, 0).done).status).toBe(200);
      const refused = await slow(ctx().agent, app.port, 0).done;
      expect(refused.status).toBe(429);
      expect(String(refused.headers['ratelimit'])).toContain('"concurrency";r=3');
      expect(await held()).toBe(0);
    });
  });
}
