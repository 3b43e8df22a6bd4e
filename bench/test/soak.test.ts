// The chaos soak, short (20 s), in `pnpm test`: every invariant holds through kills, pauses, restarts and DEBUG SLEEP (pnpm soak runs it for minutes).
import { FAULT_KINDS, formatReport, runSoak } from '../src/soak';

it('20 s of load through Express, Fastify and Koa while Redis is killed, paused, restarted and slowed: no violation', async () => {
  // A new seed each run explores more; the report names it, and `pnpm soak --seed N` replays it.
  const seed = Number(process.env.FLOODGATE_SOAK_SEED ?? Math.floor(Math.random() * 2 ** 31));
  // overload: false: issue 24's floods, default and hot-key routes and the 1 s recovery check run in
  // `pnpm soak` only. On main's failure defaults (fail-open, a breaker back-off that outlasts a
  // pause) they report violations by design, and `pnpm test` must stay green until the failure
  // path lands: then turn them on here.
  const report = await runSoak({ durationMs: 20_000, seed, overload: false });
  if (process.env.FLOODGATE_PRINT_MEASUREMENTS || report.violationCount > 0) console.log(formatReport(report));
  expect({ seed, violations: report.violations }).toEqual({ seed, violations: [] });
  // It did soak: load on every route, every kind of fault, healthy windows judged, keys looked at.
  expect(report.requests).toBeGreaterThan(1_000);
  for (const kind of FAULT_KINDS) expect(report.faults[kind]).toBeGreaterThanOrEqual(1);
  expect(report.byOutcome['store-admitted']).toBeGreaterThan(0);
  expect(report.byOutcome['fail-closed-refused']).toBeGreaterThan(0);
  expect(report.byOutcome['fail-open-admitted']).toBeGreaterThan(0);
  expect(report.healthyWindowsChecked).toBeGreaterThan(0);
  // The per-caller ceiling (limit plus the bound of src/bounds.ts) judged closed and local routes' windows, faults included.
  expect(report.callerWindowsChecked).toBeGreaterThan(0);
  expect(report.keysChecked).toBeGreaterThan(0);
}, 90_000);
