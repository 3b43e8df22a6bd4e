// The chaos soak, short (20 s), in `pnpm test`: every invariant holds through kills, pauses, restarts and DEBUG SLEEP (pnpm soak runs it for minutes).
import { FAULT_KINDS, formatReport, runSoak } from '../src/soak';

it('20 s of load through Express, Fastify and Koa while Redis is killed, paused, restarted and slowed: no violation', async () => {
  // A new seed each run explores more; the report names it, and `pnpm soak --seed N` replays it.
  const seed = Number(process.env.FLOODGATE_SOAK_SEED ?? Math.floor(Math.random() * 2 ** 31));
  const report = await runSoak({ durationMs: 20_000, seed });
  if (process.env.FLOODGATE_PRINT_MEASUREMENTS || report.violationCount > 0) console.log(formatReport(report));
  expect({ seed, violations: report.violations }).toEqual({ seed, violations: [] });
  // It did soak: load on every route, every kind of fault, healthy windows judged, keys looked at.
  expect(report.requests).toBeGreaterThan(1_000);
  for (const kind of FAULT_KINDS) expect(report.faults[kind]).toBeGreaterThanOrEqual(1);
  expect(report.byOutcome['store-admitted']).toBeGreaterThan(0);
  expect(report.byOutcome['fail-closed-refused']).toBeGreaterThan(0);
  expect(report.byOutcome['fail-open-admitted']).toBeGreaterThan(0);
  expect(report.healthyWindowsChecked).toBeGreaterThan(0);
  expect(report.keysChecked).toBeGreaterThan(0);
}, 90_000);
