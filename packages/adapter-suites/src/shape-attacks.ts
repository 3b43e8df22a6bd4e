// The generated attack suite for shaped routes (option `shape`): fast-check sequences of bursts and client aborts (before, during and after the hold) against one shaped route, checked against the shaping invariants.
//
// The store's clock never moves (a MemoryStore on a fixed clock), so no unit ever refills during a run and every bound is exact:
// (1) aborted holds cannot buy extra rate: a run's caller is served at most burst + floor(maxDelayMs / interval) times,
//     however many of its held requests went away (each gives back one unit, never more);
// (2) every served request was held at most maxDelayMs, and a refused one was not held at all;
// (3) maxWaiting bounds what the route holds: never more held at once than maxWaiting;
// (4) every hold ends exactly one way: served at its slot (the decision hooks see it) or, its client gone, refunded;
// (5) the store grows by a bound of the run's callers, not of the requests or aborts.
// Replay: FG_SHAPE_ATTACK_SEED=<seed> FG_SHAPE_ATTACK_PATH=<path>; more runs: FG_SHAPE_ATTACK_RUNS=200.
import { Agent, request as httpRequest } from 'node:http';
import { MemoryStore, type Store, type StoreRequest, type StoreResult } from '@floodgate/core';
import fc from 'fast-check';
import type { AdapterHarness, RunningApp } from './harness';
import { quietLogger } from './requests';

export const DEFAULT_SHAPE_RUNS = 15;
const BURST = 2;
const INTERVAL_MS = 25;
const MAX_DELAY_MS = 200;
const MAX_WAITING = 5;
/** What a run's caller may be served at most on a clock that never moves: the burst and every slot within maxDelayMs. */
const MOST_SERVED = BURST + Math.floor(MAX_DELAY_MS / INTERVAL_MS);

/** A MemoryStore on a fixed clock that counts what the test checks: holds granted and ended, refunds, the most held at once. */
class CountingStore implements Store {
  readonly name = 'memory';
  readonly timeoutMs = 0;
  readonly inner = new MemoryStore({ clock: () => 1_700_000_000_000 });
  held = 0;
  refunds = 0;
  /** Held requests served at their slot (told by the limiter's onDecision). */
  servedHeld = 0;
  /** Holds granted and not yet ended (served or refunded), and the most at once. */
  open = 0;
  most = 0;
  evaluateSync(request: StoreRequest): StoreResult {
    const result = this.inner.evaluateSync(request);
    if (result.delayMs) (this.held++, this.open++, (this.most = Math.max(this.most, this.open)));
    if (request.mode === 'refund') (this.refunds++, this.open--);
    return result;
  }
  async evaluate(request: StoreRequest): Promise<StoreResult> {
    return this.evaluateSync(request);
  }
  reset(keys: readonly string[]): Promise<void> {
    return this.inner.reset(keys);
  }
}

type Step = { readonly burst: number; readonly abort: readonly number[]; readonly abortAfterHeld: boolean };
const step: fc.Arbitrary<Step> = fc.record({ burst: fc.integer({ min: 1, max: 8 }), abort: fc.array(fc.nat(), { maxLength: 6 }), abortAfterHeld: fc.boolean() });

interface Sent {
  readonly abort: () => void;
  readonly done: Promise<{ status: number; delayMs: number | undefined }>;
  settled: boolean;
}

function send(agent: Agent, port: number, caller: string): Sent {
  let abort!: () => void;
  const sent: Sent = {
    abort: () => abort(),
    done: new Promise((resolve) => {
      const req = httpRequest({ host: '127.0.0.1', port, path: '/r', agent, headers: { 'x-caller': caller } }, (res) => {
        res.resume();
        const m = /floodgate-delay;dur=(\d+)/.exec(String(res.headers['server-timing'] ?? ''));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, delayMs: m ? Number(m[1]) : undefined }));
        res.on('error', () => resolve({ status: 0, delayMs: undefined }));
      });
      req.on('error', () => resolve({ status: 0, delayMs: undefined }));
      abort = () => req.destroy();
      req.end();
    }),
    settled: false,
  };
  void sent.done.then(() => (sent.settled = true));
  return sent;
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

export function runShapeAttackSuite(h: AdapterHarness): void {
  const numRuns = Number(process.env.FG_SHAPE_ATTACK_RUNS || DEFAULT_SHAPE_RUNS);
  const seed = process.env.FG_SHAPE_ATTACK_SEED ? Number(process.env.FG_SHAPE_ATTACK_SEED) : undefined;
  const path = process.env.FG_SHAPE_ATTACK_PATH || undefined;
  describe(`${h.name}: generated attacks on a shaped route (${numRuns} runs)`, () => {
    const agent = new Agent({ keepAlive: false, maxSockets: 64 });
    let app: RunningApp;
    const store = new CountingStore();
    let served = 0;
    afterAll(async () => {
      agent.destroy();
      await app?.close();
    });
    it(`bursts and aborts: at most ${MOST_SERVED} served per caller, holds within maxDelayMs, at most maxWaiting held, each hold served at its slot or refunded (never both), bounded state`, async () => {
      const callerOf = (req: { headers?: Record<string, unknown>; req?: { header(name: string): string | undefined } }) =>
        String(req.headers?.['x-caller'] ?? req.req?.header('x-caller') ?? '');
      app = await h.start({
        options: { store, logger: quietLogger, algorithm: 'gcra', burst: BURST, refillPerSecond: 1000 / INTERVAL_MS, key: callerOf, retryAfterJitterMs: 0 },
        routes: [
          {
            method: 'GET',
            path: '/r',
            options: {
              shape: { maxDelayMs: MAX_DELAY_MS, maxWaiting: MAX_WAITING },
              // A held request reaches the decision hooks only when it is served at its slot, never once its client is gone.
              onDecision: ({ decision }) => void (decision.allowed && decision.delayMs && (store.servedHeld++, store.open--)),
            },
          },
        ],
      });
      let run = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 6 }), async (steps) => {
          const caller = `c${++run}-${Math.random().toString(36).slice(2, 8)}`;
          const before = { held: store.held, refunds: store.refunds, servedHeld: store.servedHeld, size: store.inner.size };
          store.most = store.open;
          const all: Sent[] = [];
          for (const s of steps) {
            const wave = Array.from({ length: s.burst }, () => send(agent, app.port, caller));
            all.push(...wave);
            if (s.abortAfterHeld) {
              // Let the wave be decided (the memory store decides in the turn the request is read).
              for (let i = 0; i < 5; i++) await turn();
            }
            for (const k of s.abort) all[k % all.length].abort();
          }
          const answers = await Promise.all(all.map((a) => a.done));
          const ok = answers.filter((a) => a.status === 200);
          // Every hold given up is refunded (the refund is sent as the client's close is seen).
          for (let i = 0; i < 200 && store.open > 0; i++) await new Promise((resolve) => setTimeout(resolve, 5));
          const problems: string[] = [];
          if (ok.length > MOST_SERVED) problems.push(`served ${ok.length} > ${MOST_SERVED}`);
          if (ok.some((a) => (a.delayMs ?? 0) > MAX_DELAY_MS)) problems.push(`held past maxDelayMs: ${ok.map((a) => a.delayMs).join(',')}`);
          if (answers.some((a) => a.status === 429 && a.delayMs !== undefined)) problems.push('a refused request says it was held');
          if (store.most > MAX_WAITING) problems.push(`${store.most} held at once > maxWaiting ${MAX_WAITING}`);
          if (store.open !== 0) problems.push(`${store.open} holds neither served nor refunded`);
          const held = store.held - before.held;
          const refunded = store.refunds - before.refunds;
          const servedHeld = store.servedHeld - before.servedHeld;
          if (servedHeld + refunded !== held) problems.push(`${held} held, ${servedHeld} served at their slot, ${refunded} refunded: each hold must end exactly one way`);
          if (ok.filter((a) => a.delayMs !== undefined).length > servedHeld) problems.push('a response says it was held but no held decision was served');
          const grown = store.inner.size - before.size;
          if (grown > 2) problems.push(`the store grew by ${grown} entries for one caller`);
          if (problems.length) throw new Error(`${h.name}: ${problems.join('; ')}; answers ${answers.map((a) => `${a.status}${a.delayMs ? `+${a.delayMs}` : ''}`).join(' ')}`);
          served += ok.length;
        }),
        { numRuns, seed, path, endOnFailure: path !== undefined },
      );
      // The runs met the limit and held requests, so the bounds were under test.
      expect(store.held).toBeGreaterThan(0);
      expect(store.refunds).toBeGreaterThan(0);
      console.log(`shape attacks | ${h.name} | ${numRuns} runs: ${served} served, ${store.held} held, ${store.refunds} holds given up and refunded`);
    }, 120_000);
  });
}
