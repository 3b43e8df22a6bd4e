// The flood bench end to end on a real redis-server, small (2 processes x 20 decisions): the workers' protocol, every decision answered and counted.
import { buildChildren } from '../src/build';
import { runFlood, thisSide } from '../src/flood';
import { Progress } from '../src/progress';

it('runs every burst scenario on one Redis and answers and counts every decision', async () => {
  await buildChildren({ children: ['flood-worker'] });
  const quiet = new Progress(0, { write: () => true, isTTY: false } as unknown as NodeJS.WriteStream);
  const settings = { processes: 2, inFlight: 20, limit: 10, repetitions: 1, algorithms: ['fixed-window' as const], topologies: ['single' as const], outages: [], outageMs: 1_000, kinds: ['one' as const, 'fresh' as const, 'fresh-fleet' as const], joiners: 0 };
  const [{ scenarios, outages }] = await runFlood(settings, [thisSide()], quiet);
  expect(scenarios.map((s) => s.id)).toEqual(['single/one/off/fixed-window', 'single/fresh/off/sliding-window-counter', 'single/one/default/fixed-window', 'single/fresh/default/sliding-window-counter', 'single/fresh-fleet/off/fixed-window']);
  expect(outages).toEqual([]);
  for (const s of scenarios) {
    expect({ id: s.id, decisions: s.decisions, rejected: s.rejected }).toEqual({ id: s.id, decisions: 40, rejected: 0 });
    // Every decision has a reason, and the waits were measured against a deadline.
    expect(Object.values(s.byReason).reduce((a, b) => a + b, 0)).toBe(40);
    expect(s.deadlineMs).toBeGreaterThan(0);
    expect(s.maxWaitMs).toBeGreaterThanOrEqual(s.p99WaitMs);
    // 40 decisions on one subject of limit 10: the store admits 10, and anything past it a failure mode let through.
    if (s.subjects === 'one') expect(s.admittedPerRepetition[0]).toBe(s.maxAdmittedPerSubject);
    else expect(s.maxAdmittedPerSubject).toBeLessThanOrEqual(1);
    const storeAdmitted = s.byReason.allowed ?? 0;
    if (s.subjects === 'one') expect(storeAdmitted).toBeLessThanOrEqual(10);
  }
}, 60_000);
