// The chaos soak, short (one round of every fault and flood, about 15 s), in `pnpm test`: every invariant holds through kills, pauses, restarts and DEBUG SLEEP (pnpm soak runs it for minutes).
import { FAULT_KINDS, FLOOD_KINDS, formatReport, runSoak } from '../src/soak';

it('load through Express, Fastify and Koa while Redis is killed, paused, restarted and slowed, and flooded, each once: no violation', async () => {
  // A new seed each run explores more; the report names it, and `pnpm soak --seed N` replays it.
  const seed = Number(process.env.FLOODGATE_SOAK_SEED ?? Math.floor(Math.random() * 2 ** 31));
  // Issue 24's overload phases on: floods of one hot caller and of fresh callers beside the faults,
  // the default and hot-key routes, and closed routes back within 1 s of Redis answering. Floods of
  // 8 in flight, not pnpm soak's 24: they run in this process beside the apps, and beside the other
  // suites on a loaded CI machine their own work delayed every answer of the process (seen: 270 ms,
  // all routes at once, while the loop never stood still long enough for the stall allowance).
  // Still far past the default route's 5 per second.
  // Latency: pnpm soak judges each answer by the strict deadline (100 + 50 ms plus its loop's stall) and
  // recovery within 1 s. Here, beside the other suites on a loaded 2-core machine, the whole machine
  // stands still at once (seen: six answers of 295 ms at one instant, 11.8 s in, the loop's stall only
  // 144 ms: other processes held the cores). So the test allows 3 s more: a hang still fails it, and
  // every count (admissions per window, failMode answers, TTLs) is judged as strictly as pnpm soak does.
  // Sized to one round: runSoak goes on until every kind of fault and flood has struck once, whatever
  // the duration (about 15 s here, with a healthy gap of 0.8-2 s before each), and every check runs on
  // every answer and window of it. 5 s (pnpm soak's shortest) asks for nothing more: 20 s repeated
  // part of a second round, the same kinds again. pnpm soak runs for minutes.
  const report = await runSoak({ durationMs: 5_000, seed, overload: true, floodInFlight: 8, latencyAllowanceMs: 3_000 });
  if (process.env.FLOODGATE_PRINT_MEASUREMENTS || report.violationCount > 0) console.log(formatReport(report));
  expect({ seed, violations: report.violations }).toEqual({ seed, violations: [] });
  // It did soak: load on every route, every kind of fault, healthy windows judged, keys looked at.
  expect(report.requests).toBeGreaterThan(1_000);
  for (const kind of FAULT_KINDS) expect(report.faults[kind]).toBeGreaterThanOrEqual(1);
  // The overload phases ran: each flood kind, and the default route decided alone during the faults (its local share).
  expect(report.overload).toBe(true);
  for (const kind of FLOOD_KINDS) expect(report.faults[kind]).toBeGreaterThanOrEqual(1);
  // The autoscaler phase (issue 49) ran and its caller's windows were judged (scaleOutCeiling; a miss is a violation above).
  expect(report.worstScaleOut).not.toBeNull();
  expect(report.floodRequests).toBeGreaterThan(0);
  expect((report.byOutcome['fail-default-admitted'] ?? 0) + (report.byOutcome['fail-default-limited'] ?? 0)).toBeGreaterThan(0);
  expect(report.byOutcome['store-admitted']).toBeGreaterThan(0);
  expect(report.byOutcome['fail-closed-refused']).toBeGreaterThan(0);
  expect(report.byOutcome['fail-open-admitted']).toBeGreaterThan(0);
  expect(report.healthyWindowsChecked).toBeGreaterThan(0);
  // The per-caller ceiling (limit plus the bound of src/bounds.ts) judged closed and local routes' windows, faults included.
  expect(report.callerWindowsChecked).toBeGreaterThan(0);
  expect(report.keysChecked).toBeGreaterThan(0);
}, 90_000);
