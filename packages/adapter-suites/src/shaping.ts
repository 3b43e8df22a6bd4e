// The shaping suite every adapter runs (route option `shape`): requests over the rate held for their reserved slot and told so, refused past maxDelayMs or maxWaiting, and a caller that goes away gives its slot back.
import { Agent, request as httpRequest, type ClientRequest } from 'node:http';
import { MemoryStore, type Store, type StoreRequest, type StoreResult } from '@floodgate/core';
import type { AdapterHarness, RunningApp } from './harness';
import { quietLogger } from './requests';

interface Answer {
  status: number;
  /** The held delay the response names (Server-Timing floodgate-delay;dur=...), or undefined. */
  delayMs: number | undefined;
}

/** A MemoryStore on a clock that never moves (every decision at one instant: exact delays), telling each call it decides. */
class WatchedStore implements Store {
  readonly name = 'memory';
  readonly timeoutMs = 0;
  private readonly inner = new MemoryStore({ clock: () => 1_700_000_000_000 });
  private waiters: { want: (request: StoreRequest, result: StoreResult) => boolean; resolve: () => void }[] = [];
  evaluateSync(request: StoreRequest): StoreResult {
    const result = this.inner.evaluateSync(request);
    this.waiters = this.waiters.filter((w) => !(w.want(request, result) && (w.resolve(), true)));
    return result;
  }
  async evaluate(request: StoreRequest): Promise<StoreResult> {
    return this.evaluateSync(request);
  }
  reset(keys: readonly string[]): Promise<void> {
    return this.inner.reset(keys);
  }
  /** Resolves at the next call that `want` accepts. */
  next(want: (request: StoreRequest, result: StoreResult) => boolean): Promise<void> {
    return new Promise((resolve) => this.waiters.push({ want, resolve }));
  }
}

function send(agent: Agent, port: number): { req: ClientRequest; done: Promise<Answer> } {
  let req!: ClientRequest;
  const done = new Promise<Answer>((resolve, reject) => {
    req = httpRequest({ host: '127.0.0.1', port, path: '/r', method: 'GET', agent }, (res) => {
      res.resume();
      const timing = String(res.headers['server-timing'] ?? '');
      const m = /floodgate-delay;dur=(\d+)/.exec(timing);
      res.on('end', () => resolve({ status: res.statusCode ?? 0, delayMs: m ? Number(m[1]) : undefined }));
    });
    req.on('error', reject);
    req.end();
  });
  return { req, done };
}

export function runShapingSuite(h: AdapterHarness): void {
  describe(`${h.name}: shaping (route option shape)`, () => {
    const agent = new Agent({ keepAlive: false, maxSockets: 50 });
    const apps: RunningApp[] = [];
    afterAll(async () => {
      agent.destroy();
      await Promise.all(apps.map((a) => a.close()));
    });
    /** GET /r at burst 1, one more every `intervalMs`, shaped by `shape`. */
    async function start(intervalMs: number, shape: { maxDelayMs: number; maxWaiting?: number }): Promise<{ app: RunningApp; store: WatchedStore }> {
      const store = new WatchedStore();
      const app = await h.start({
        options: { store, logger: quietLogger, algorithm: 'gcra', burst: 1, refillPerSecond: 1000 / intervalMs, retryAfterJitterMs: 0 },
        routes: [{ method: 'GET', path: '/r', options: { shape } }],
      });
      apps.push(app);
      return { app, store };
    }

    it('holds each request over the rate for its own slot and says so (Server-Timing); past maxDelayMs it is refused 429', async () => {
      const { app } = await start(100, { maxDelayMs: 250 });
      const answers = await Promise.all(Array.from({ length: 5 }, () => send(agent, app.port).done));
      const served = answers.filter((a) => a.status === 200);
      expect(served.map((a) => a.delayMs ?? 0).sort((a, b) => a - b)).toEqual([0, 100, 200]);
      expect(answers.filter((a) => a.status === 429).map((a) => a.delayMs)).toEqual([undefined, undefined]);
    });

    it('refuses at once past maxWaiting requests already held on the route', async () => {
      const { app, store } = await start(1000, { maxDelayMs: 10_000, maxWaiting: 1 });
      expect((await send(agent, app.port).done).status).toBe(200);
      const heldNow = store.next((_, result) => result.delayMs !== undefined);
      const held = send(agent, app.port).done;
      await heldNow;
      // One held: the next one is not held (it would wait 2 s), it is refused.
      expect(await send(agent, app.port).done).toEqual({ status: 429, delayMs: undefined });
      expect(await held).toEqual({ status: 200, delayMs: 1000 });
    });

    it('a held request whose caller goes away gives its slot back: the next one is held for that slot, not the one after', async () => {
      const { app, store } = await start(1000, { maxDelayMs: 10_000 });
      expect((await send(agent, app.port).done).status).toBe(200);
      const heldNow = store.next((_, result) => result.delayMs === 1000);
      const leaving = send(agent, app.port);
      leaving.done.catch(() => undefined);
      await heldNow;
      const refunded = store.next((request) => request.mode === 'refund');
      leaving.req.destroy();
      await refunded;
      expect(await send(agent, app.port).done).toEqual({ status: 200, delayMs: 1000 });
    });
  });
}
