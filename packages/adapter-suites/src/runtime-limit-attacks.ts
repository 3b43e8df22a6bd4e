// A generated attack (fast-check) every adapter runs: a hostile header chooses the limit a limit function returns; whatever it sends, a caller never passes limitCeiling, nothing crashes, and state stays bounded.
import { Agent } from 'node:http';
import { MemoryStore } from '@floodgate/core';
import fc from 'fast-check';
import type { AdapterHarness } from './harness';
import { headerOf } from './runtime-limits';
import { getStatus } from './warnings';

const CEILING = 3;
const PLANS: Readonly<Record<string, number>> = { free: 1, pro: 2, enterprise: 1_000_000 };

/** What a client writes in x-plan: a plan name, a number of any size or sign, or junk. */
const planHeader = fc.oneof(
  { arbitrary: fc.constantFrom('free', 'pro', 'enterprise', '', 'NaN', 'Infinity', '-1', '0', '1e309', '2.5', '__proto__', 'constructor'), weight: 3 },
  { arbitrary: fc.integer({ min: -1_000_000, max: 2_000_000_000 }).map(String), weight: 2 },
  { arbitrary: fc.string({ maxLength: 20 }).filter((s) => /^[\x21-\x7e]*$/.test(s)), weight: 1 },
);

export function runGeneratedRuntimeLimitSuite(h: AdapterHarness, runs = Number(process.env.FG_ATTACK_RUNS || 25)): void {
  describe(`${h.name}: generated attack on a limit function (a hostile plan header)`, () => {
    const agent = new Agent({ keepAlive: true });
    afterAll(() => agent.destroy());

    it(`admits at most limitCeiling (${CEILING}) per caller whatever x-plan says; 200, 429 or 503 only; store entries bounded by the callers`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(fc.record({ caller: fc.integer({ min: 0, max: 1 }), plan: planHeader }), { minLength: 8, maxLength: 24 }), async (requests) => {
          const store = new MemoryStore();
          const limit = (req: unknown) => {
            const plan = headerOf(req, 'x-plan') ?? 'free';
            return Object.hasOwn(PLANS, plan) ? PLANS[plan] : Number(plan);
          };
          const app = await h.start({
            options: { store, logger: { warn() {}, error() {} }, limitCeiling: CEILING, limitValuesMax: 8, limit, windowMs: '1h' },
            routes: [{ method: 'GET', path: '/r' }],
            trustProxy: true,
          });
          try {
            const admitted = [0, 0];
            for (const r of requests) {
              const status = await getStatus(agent, app.port, '/r', { 'x-plan': r.plan, 'x-forwarded-for': `198.51.100.${r.caller + 1}` });
              expect([200, 429, 503]).toContain(status);
              if (status === 200) admitted[r.caller]++;
            }
            expect(Math.max(...admitted)).toBeLessThanOrEqual(CEILING);
            // One state per caller (and its block record at most), however many plans were sent.
            expect(store.size).toBeLessThanOrEqual(2 * 2);
          } finally {
            await app.close();
          }
        }),
        { numRuns: runs },
      );
    }, 120_000);
  });
}
