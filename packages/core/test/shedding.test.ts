// Worker utilisation shedding: under a CPU-bound overload of this very process, background is shed before default, critical never; calm brings them back; the hooks see every shed request.
import { MemoryStore } from '../src';
import { createHttpLimiter, type HttpLimiter } from '../src/http';
import type { RateLimitEvent } from '../src';
import { pollUntil } from '@floodgate/testing';
import { LoadShedder, PRIORITIES, resolveShedding } from '../src/shedding/load-shedder';

const silent = { warn() {}, error() {} };
const facts = { ip: '127.0.0.1', headers: {}, method: 'GET', route: '/r' };

/** Keeps the event loop busy for `ms`: the overload a CPU-bound handler makes. */
function spin(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // busy
  }
}
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

async function statusOf(http: HttpLimiter, priority: 'critical' | 'default' | 'background'): Promise<number | 'next'> {
  const route = http.route({ priority });
  return (await route!.handle(facts, {})).status;
}

it('sheds background first, then default, never critical, and comes back with hysteresis once calm', async () => {
  const decided: RateLimitEvent[] = [];
  const limited: RateLimitEvent[] = [];
  const http = createHttpLimiter({
    store: new MemoryStore(),
    logger: silent,
    limit: 1_000_000,
    shedding: { utilization: 0.9, delayMs: 100, sampleMs: 50 },
    onDecision: (e) => void decided.push(e),
    onLimited: (e) => void limited.push(e),
  });
  const routes = { critical: http.route({ priority: 'critical' })!, default: http.route({ priority: 'default' })!, background: http.route({ priority: 'background' })! };
  const firstShed: Record<string, number> = {};
  const timeline: string[] = [];
  for (let step = 0; step < 60 && firstShed.default === undefined; step++) {
    spin(60); // the loop is busy all through each 50 ms sample
    await turn(); // let the sampler's timer run
    const shedNow: string[] = [];
    for (const [name, route] of Object.entries(routes)) {
      const result = await route.handle(facts, {});
      if (result.status === 503) {
        shedNow.push(name);
        firstShed[name] ??= step;
        expect(result.decision?.reason).toBe('shed');
        expect(JSON.parse(result.body as string)).toMatchObject({ status: 503, type: expect.stringContaining('temporary-reduced-capacity') });
        expect(result.headers.find(([n]) => n === 'Retry-After')).toBeDefined();
      }
    }
    timeline.push(shedNow.join('+') || '-');
    // critical is never shed, and default only while background is shed too.
    expect(shedNow).not.toContain('critical');
    if (shedNow.includes('default')) expect(shedNow).toContain('background');
  }
  // The hooks saw every shed request as a denied decision: reason 'shed', drawn nothing, no identity looked up.
  const shedCount = timeline.reduce((n, step) => n + (step === '-' ? 0 : step.split('+').length), 0);
  const shedEvents = decided.filter((e) => e.decision.reason === 'shed');
  expect(shedEvents).toHaveLength(shedCount);
  expect(limited.filter((e) => e.decision.reason === 'shed')).toHaveLength(shedCount);
  for (const e of shedEvents) expect(e).toMatchObject({ scope: 'GET /r', cost: 0, identity: 'none', shadow: false, decision: { allowed: false } });
  // Served requests are decided as before (critical always among them).
  expect(decided.filter((e) => e.decision.allowed).length).toBeGreaterThan(0);
  expect(firstShed.background).toBeDefined();
  expect(firstShed.default).toBeDefined();
  expect(firstShed.background).toBeLessThan(firstShed.default);
  expect(http.health().shedding).toMatchObject({ level: 2 });
  expect(http.health().shedding!.shed.background).toBeGreaterThan(0);
  // Calm: the level steps down one class at a time, after 3 calm samples each.
  await pollUntil(async () => ((await statusOf(http, 'default')) === 'next' ? true : undefined), { timeoutMs: 5_000, what: 'default served again' });
  await pollUntil(async () => ((await statusOf(http, 'background')) === 'next' ? true : undefined), { timeoutMs: 5_000, what: 'background served again' });
  expect(http.health().shedding!.level).toBe(0);
  console.log(`shedding timeline (one step = 60 ms busy): ${timeline.join(' ')}; first shed at step: background ${firstShed.background}, default ${firstShed.default}, critical ${firstShed.critical ?? 'never'}`);
});

it('refuses shedding on a route and a priority it does not know, naming the option', () => {
  const http = createHttpLimiter({ logger: silent, shedding: true });
  expect(() => http.route({ shedding: true })).toThrow(/`shedding`.*app-level limiter/);
  expect(() => createHttpLimiter({ priority: 'low' as never })).toThrow(/`priority`: got "low"; expected one of 'critical', 'default', 'background'/);
  expect(() => createHttpLimiter({ shedding: { utilization: 2 } })).toThrow(/`shedding.utilization`: got 2; expected a number from 0.5 to 1/);
  expect(() => createHttpLimiter({ shedding: { util: 0.8 } as never })).toThrow(/util/);
});

describe('the hysteresis, sample by sample (the samples fed by the test: no clock)', () => {
  // Thresholds: overloaded at utilisation 0.9 or a timer 200 ms late; calm under 0.72 and 100 ms.
  const busy = { utilization: 0.95, delayMs: 0 };
  const late = { utilization: 0.1, delayMs: 250 };
  const calm = { utilization: 0.1, delayMs: 0 };
  const between = { utilization: 0.8, delayMs: 0 }; // neither overloaded nor calm
  let shedder: LoadShedder;
  beforeEach(() => {
    shedder = new LoadShedder(resolveShedding({ utilization: 0.9, delayMs: 200, sampleMs: 10_000 })!);
    shedder.stop(); // only the samples below count
  });
  const levels = (samples: { utilization: number; delayMs: number }[]) =>
    samples.map((s) => {
      shedder.observe(s);
      return shedder.stats.level;
    });

  it('rises one level per overloaded sample (busy or late), up to 2', () => {
    expect(levels([busy, late, busy])).toEqual([1, 2, 2]);
  });

  it('steps down one level only after 3 calm samples in a row, and never straight to 0', () => {
    levels([busy, busy]);
    expect(levels([calm, calm, calm, calm, calm, calm])).toEqual([2, 2, 1, 1, 1, 0]);
  });

  it('starts the calm count again after an overloaded or an in-between sample', () => {
    levels([busy]);
    expect(levels([calm, calm, between, calm, calm, calm])).toEqual([1, 1, 1, 1, 1, 0]);
    levels([busy]);
    expect(levels([calm, calm, late, calm, calm, calm, calm, calm])).toEqual([1, 1, 2, 2, 2, 1, 1, 1]);
  });

  it('sheds by level: background at 1, default too at 2, critical never', () => {
    const shed = () => PRIORITIES.filter((p) => shedder.sheds(p));
    expect(shed()).toEqual([]);
    levels([busy]);
    expect(shed()).toEqual(['background']);
    levels([busy]);
    expect(shed()).toEqual(['default', 'background']);
  });
});
