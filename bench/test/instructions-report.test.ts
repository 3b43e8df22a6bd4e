// bench:instructions' tables on made-up rows (no valgrind): added over the bare route, the best peer, the goals' verdicts, the page's block, two runs compared.
import { peersOption, spliceBlock } from '../src/instructions';
import { compareTable, goals, mergeResults, provenance, renderInstructions, summaryTable, verdictTable } from '../src/instructions-report';
import { collectorLines, compileLines, majorGcLines } from '../src/instructions-callgrind';
import { contenderKind, loadPlan, planJobs, takeRows, type InstrSettings } from '../src/instructions-run';
import { callerAddress, everyCaller } from '../src/load';
import type { InstrResults, InstrRow } from '../src/instructions-types';

function row(partial: Partial<InstrRow> & Pick<InstrRow, 'id' | 'group' | 'serverIr'>): InstrRow {
  return {
    framework: 'fastify',
    load: 'callers',
    regime: 'admit',
    label: partial.id,
    store: 'memory',
    responses: 1000,
    ok: 1000,
    limited: 0,
    errors: 0,
    redisIr: null,
    scriptCalls: null,
    redisCommands: null,
    windowS: 1,
    majorGcIr: 0,
    ...partial,
  };
}

const results = (rows: InstrRow[], label = 'a'): InstrResults => ({
  kind: 'instructions',
  label,
  date: '2026-12-03T00:00:00.000Z',
  commit: 'abc1234',
  command: 'pnpm bench:instructions',
  machine: 'test',
  settings: { requests: 1000, warmup: 1000, settle: 100, connections: 1, callers: 10_000, parallel: 1 },
  durationS: 60,
  rows,
});

const RUN = results([
  row({ id: 'fastify/none@callers', group: 'ceiling', regime: null, store: null, serverIr: 100_000 }),
  row({ id: 'fastify/floodgate-memory/admit@callers', group: 'floodgate', serverIr: 130_000 }),
  row({ id: 'fastify/fastify-rate-limit-memory/admit@callers', label: '@fastify/rate-limit (memory)', group: 'peer', serverIr: 140_000 }),
  row({ id: 'fastify/floodgate-redis-sliding-window-counter/admit@callers', group: 'floodgate', store: 'redis', serverIr: 200_000, redisIr: 90_000, scriptCalls: 1 }),
  row({ id: 'fastify/fastify-rate-limit/admit@callers', label: '@fastify/rate-limit (Redis)', group: 'peer', store: 'redis', serverIr: 180_000, redisIr: 60_000, scriptCalls: 1 }),
  row({ id: 'fastify/floodgate-memory/reject@callers', group: 'floodgate', regime: 'reject', serverIr: 99_000, ok: 0, limited: 1000 }),
]);

describe('bench:instructions report', () => {
  it('gives each goal its figure, its bound (0.85 of the best peer, or the bare route) and whether it is met', () => {
    const byGoal = Object.fromEntries(goals(RUN).map((g) => [g.goal.split(':')[0], g]));
    // Memory: +30k against 0.85 x +40k = +34k: met.
    expect(byGoal['memory, admitting']).toMatchObject({ figure: 30_000, bound: 34_000 });
    // Redis: +100k against 0.85 x +80k = +68k: missed; per decision 90k against 51k.
    expect(byGoal['Redis, admitting']).toMatchObject({ figure: 100_000, bound: 68_000 });
    expect(byGoal['Redis instructions per decision ≤ 0.85 × best peer']).toMatchObject({ figure: 90_000, bound: 51_000 });
    expect(byGoal['memory, rejecting']).toMatchObject({ figure: -1_000, bound: 0 });
  });

  it('prints added instructions with their sign and the best peer by name', () => {
    const table = summaryTable(RUN);
    expect(table).toContain('| 10,000 callers (X-Forwarded-For) | fastify (100.0k) | +100.0k (1.00 calls) | +80.0k @fastify/rate-limit (1.00 calls) |');
    expect(table).toContain('| +30.0k | +40.0k @fastify/rate-limit | 90.0k / 60.0k | −1.0k / – / – |');
  });

  it('says of a --taken-only run that it measured nothing itself, not "0 min"', () => {
    const line = renderInstructions({ ...RUN, takenOnly: true }).split('\n')[0];
    expect(line).toContain('measured nothing itself');
    expect(line).not.toContain(' min');
  });

  it("replaces a label's block in the page and appends a new one", () => {
    const page = 'intro\n<!-- bench:instructions before -->\nold\n<!-- /bench:instructions before -->\noutro\n';
    const replaced = spliceBlock(page, 'before', 'new');
    expect(replaced).toBe('intro\n<!-- bench:instructions before -->\nnew\n<!-- /bench:instructions before -->\noutro\n');
    expect(spliceBlock(replaced, 'after', 'x')).toContain('outro\n\n<!-- bench:instructions after -->\nx\n<!-- /bench:instructions after -->\n');
  });

  it('compares two runs row by row and reports the largest difference', () => {
    const other = results(RUN.rows.map((r) => ({ ...r, serverIr: r.serverIr * 1.01 })), 'b');
    const { worst, table } = compareTable(RUN, other);
    expect(worst).toBeCloseTo(0.01, 6);
    expect(table).toContain('| fastify/none@callers | 100.0k | 101.0k | 1.00% |');
  });

  it('plans the bare route always and the contenders asked for', () => {
    const jobs = planJobs({
      frameworks: ['fastify'],
      loads: ['callers'],
      regimes: ['admit'],
      contenders: ['floodgate-memory'],
      peers: 'all',
      requests: 1,
      warmup: 1,
      settle: 1,
      connections: 1,
      callers: 10_000,
      parallel: 1,
      outDir: '',
      log: () => {},
    });
    expect(jobs.map((j) => contenderKind(j.contender.id))).toEqual(['none', 'floodgate-memory']);
    expect(jobs.every((j) => j.contender.load === 'callers')).toBe(true);
  });

  it("sums V8's compiler entry points of an annotated dump, and nothing else", () => {
    const annotated = [
      '244,526,903 (100.0%)  PROGRAM TOTALS',
      '117,040,704 (47.86%)  ???:v8::internal::Runtime_CompileOptimized(int, unsigned long*, v8::internal::Isolate*) [/usr/bin/node]',
      '116,283,640 (47.55%)  ???:v8::internal::compiler::PipelineCompilationJob::ExecuteJobImpl(v8::internal::RuntimeCallStats*) [/usr/bin/node]',
      '    12,345 ( 0.01%)  ???:v8::internal::Runtime_CompileLazy(int, unsigned long*, v8::internal::Isolate*) [/usr/bin/node]',
      ' 2,616,406 ( 1.07%)  ???:v8::internal::Heap::CollectGarbage(v8::internal::AllocationSpace) [/usr/bin/node]',
    ].join('\n');
    expect(compileLines(annotated)).toBe(117_040_704 + 12_345);
    expect(collectorLines(annotated)).toBe(2_616_406);
  });

  it("sums a major GC cycle's three parts (marking steps, its start, the mark-compact) and not their callers", () => {
    // Lines of an Express dump with a cycle in its window (`callgrind_annotate --inclusive=yes`).
    const annotated = [
      '133,373,189 ( 9.75%)  ???:v8::internal::IncrementalMarkingJob::Task::RunInternal() [/usr/bin/node]',
      '120,798,816 ( 8.83%)  ???:v8::internal::IncrementalMarking::Step(double, v8::internal::StepOrigin) [/usr/bin/node]',
      ' 95,895,363 ( 7.01%)  ???:v8::internal::IncrementalMarking::AdvanceAndFinalizeIfComplete() [/usr/bin/node]',
      ' 92,471,189 ( 6.76%)  ???:v8::internal::Heap::CollectGarbage(v8::internal::AllocationSpace, v8::internal::GarbageCollectionReason, v8::GCCallbackFlags) [/usr/bin/node]',
      ' 38,296,168 ( 2.80%)  ???:v8::internal::IncrementalMarking::Observer::Step(int, unsigned long, unsigned long) [/usr/bin/node]',
      ' 37,236,550 ( 2.72%)  ???:v8::internal::Heap::StartIncrementalMarking(int, v8::internal::GarbageCollectionReason, v8::GCCallbackFlags, v8::internal::GarbageCollector) [/usr/bin/node]',
      ' 12,821,732 ( 0.94%)  ???:v8::internal::MarkCompactCollector::CollectGarbage() [/usr/bin/node]',
      '  2,223,396 ( 0.16%)  ???:v8::internal::Heap::StartIncrementalMarkingIfAllocationLimitIsReached(int, v8::GCCallbackFlags) [/usr/bin/node]',
    ].join('\n');
    expect(majorGcLines(annotated)).toEqual({ total: 120_798_816 + 37_236_550 + 12_821_732, markCompact: 12_821_732 });
    expect(majorGcLines(' 2,616,406 ( 1.07%)  ???:v8::internal::Heap::CollectGarbage(v8::internal::AllocationSpace) [/usr/bin/node]')).toEqual({ total: 0, markCompact: 0 });
  });
});

const SETTINGS: InstrSettings = {
  frameworks: ['express'],
  loads: ['one'],
  regimes: ['admit', 'reject'],
  contenders: [],
  peers: 'all',
  requests: 2000,
  warmup: 8000,
  settle: 1000,
  connections: 1,
  callers: 10_000,
  parallel: 1,
  outDir: '',
  log: () => {},
};

describe('bench:instructions plan', () => {
  it("--peers best keeps each framework's cheapest peer a store and every other contender", () => {
    const kinds = (peers: InstrSettings['peers']) => planJobs({ ...SETTINGS, peers }).map((j) => contenderKind(j.contender.id) + (j.contender.regime ? `/${j.contender.regime}` : ''));
    const all = kinds('all');
    const best = kinds('best');
    expect(all.filter((k) => k.startsWith('express-rate-limit'))).toHaveLength(4);
    expect(best.filter((k) => k.startsWith('express-rate-limit'))).toEqual([]);
    expect(best).toEqual(all.filter((k) => !k.startsWith('express-rate-limit')));
    expect(best).toEqual(expect.arrayContaining(['none', 'redis-floor-turn/admit', 'rate-limiter-flexible-memory/reject', 'rate-limiter-flexible/admit', 'floodgate-redis-sliding-window-counter/reject']));
    // Express: bare, floor, and per regime Floodgate and one peer in each store.
    expect(best).toHaveLength(10);
    // Fastify has one peer a store: best is all of them.
    expect(planJobs({ ...SETTINGS, frameworks: ['fastify'], peers: 'best' })).toHaveLength(planJobs({ ...SETTINGS, frameworks: ['fastify'] }).length);
    expect(kinds(['express-rate-limit']).filter((k) => k.startsWith('rate-limiter-flexible'))).toEqual([]);
  });

  it('plans every row a goal reads first, per load then framework, and the floor and peers\' 429s last', () => {
    const jobs = planJobs({ ...SETTINGS, frameworks: ['express', 'koa'], loads: ['one', 'callers'], peers: 'best' });
    const tags = jobs.map((j) => `${j.load} ${contenderKind(j.contender.id)}${j.contender.regime ? `/${j.contender.regime}` : ''}`);
    expect(jobs).toHaveLength(40);
    // 7 goal rows per framework and load (bare, Floodgate x store x regime, the peers admitting), then 3 context rows.
    expect(tags.slice(28).sort()).toEqual(
      ['one', 'callers'].flatMap((l) => [`${l} redis-floor-turn/admit`, `${l} rate-limiter-flexible-memory/reject`, `${l} rate-limiter-flexible/reject`, `${l} redis-floor-turn/admit`, `${l} koa-ratelimit-memory/reject`, `${l} koa-ratelimit/reject`]).sort(),
    );
    expect(jobs.slice(0, 28).map((j) => `${j.load} ${j.contender.framework}`).filter((t, i, a) => a.indexOf(t) === i)).toEqual(['one express', 'one koa', 'callers express', 'callers koa']);
  });

  it('--peers takes all, best or known peer libraries, and names the valid ones otherwise', () => {
    expect(peersOption(undefined)).toBe('all');
    expect(peersOption('best')).toBe('best');
    expect(peersOption('koa-ratelimit,rate-limiter-flexible')).toEqual(['koa-ratelimit', 'rate-limiter-flexible']);
    expect(() => peersOption('express-ratelimit')).toThrow(/--peers: "express-ratelimit" is not all, best or one of .*express-rate-limit/);
  });

  it("runs one rotation of the callers over every step: the counted requests' callers were last seen 10,000 requests before", () => {
    const [reject] = planJobs({ ...SETTINGS, frameworks: ['fastify'], loads: ['callers'], contenders: ['floodgate-memory'], regimes: ['reject'] }).filter((j) => j.contender.regime === 'reject');
    const plan = loadPlan(reject, SETTINGS);
    expect(plan.spend).toEqual({ connections: 10, amount: 10_000, callers: 10_000, callerStart: 0 });
    expect(plan.warmup.callerStart).toBe(10_000);
    expect(plan.settle.callerStart).toBe(18_000);
    expect(plan.counted).toEqual({ connections: 1, amount: 2000, callers: 10_000, callerStart: 19_000 });
    const one = loadPlan(planJobs({ ...SETTINGS, frameworks: ['fastify'] })[1], SETTINGS);
    expect(one.spend).toBeUndefined();
    expect(one.counted.callers).toBeUndefined();
  });

  it('sends the callers from the step\'s first one on, wrapping at the number of callers', () => {
    const [hook] = everyCaller(10_000, 19_999);
    const first = hook.setupRequest({}) as { headers: Record<string, string> };
    const second = hook.setupRequest({}) as { headers: Record<string, string> };
    expect([first.headers['x-forwarded-for'], second.headers['x-forwarded-for']]).toEqual([callerAddress(9_999), callerAddress(0)]);
  });
});

describe('bench:instructions rows from earlier runs', () => {
  const jobs = planJobs({ ...SETTINGS, frameworks: ['fastify'], loads: ['callers'], regimes: ['admit'] });
  const same = { requests: 1000, warmup: 1000, settle: 100, connections: 1, callers: 10_000 };
  const before = results([...RUN.rows, row({ id: 'fastify/redis-floor-turn/admit@callers', group: 'floor', store: 'redis', serverIr: 101_000 })], 'before');

  it('--reuse takes peers and floors with their own bare route, never Floodgate or the bare route', () => {
    const taken = takeRows(jobs, same, [], [before]);
    const byId = Object.fromEntries(jobs.map((j, i) => [contenderKind(j.contender.id), taken[i]]));
    expect(byId['none']).toBeUndefined();
    expect(byId['floodgate-memory']).toBeUndefined();
    expect(byId['floodgate-redis-sliding-window-counter']).toBeUndefined();
    expect(byId['fastify-rate-limit-memory']).toMatchObject({ serverIr: 140_000, from: 'before', bareIr: 100_000 });
    expect(byId['redis-floor-turn']).toMatchObject({ serverIr: 101_000, from: 'before', bareIr: 100_000 });
  });

  it('--resume takes every row of a stopped run, Floodgate\'s too', () => {
    const taken = takeRows(jobs, same, [before], []);
    expect(taken.filter(Boolean).map((r) => r!.id)).toEqual(jobs.map((j) => j.contender.id).filter((id) => before.rows.some((r) => r.id === id)));
    expect(taken.every((r) => r === undefined || r.from === undefined)).toBe(true);
  });

  it('refuses rows of a run that counted major GC cycles in its figures', () => {
    const counted = results(before.rows.map(({ majorGcIr: _, ...r }) => r), 'old');
    expect(() => takeRows(jobs, same, [], [counted])).toThrow('run old: counted V8\'s major GC cycles in its rows');
  });

  it('refuses rows counted with other settings, naming them', () => {
    expect(() => takeRows(jobs, { ...same, warmup: 8000 }, [], [before])).toThrow('run before: warmup 1000 (here 8000)');
  });

  it("counts a reused row over its own run's bare route and says where it came from and how far the bare routes are apart", () => {
    const after = results(
      [
        row({ id: 'fastify/none@callers', group: 'ceiling', regime: null, store: null, serverIr: 101_000 }),
        row({ id: 'fastify/floodgate-memory/admit@callers', group: 'floodgate', serverIr: 120_000 }),
        row({ id: 'fastify/fastify-rate-limit-memory/admit@callers', label: '@fastify/rate-limit (memory)', group: 'peer', serverIr: 140_000, from: 'before', bareIr: 100_000 }),
      ],
      'after',
    );
    const memory = goals(after).find((g) => g.goal.startsWith('memory, admitting'));
    // Floodgate +19k over this run's 101k; the peer +40k over its own run's 100k (not +39k).
    expect(memory).toMatchObject({ figure: 19_000, bound: 34_000 });
    expect(provenance(after).join('\n')).toContain('taken from run `before`');
    expect(provenance(after).join('\n')).toContain('differs by at most 1.0% between the runs');
  });
});

describe('bench:instructions verdicts for several frameworks', () => {
  const koa = (r: InstrRow): InstrRow => ({ ...r, framework: 'koa', id: r.id.replace('fastify/', 'koa/') });
  const floor = row({ id: 'fastify/redis-floor-turn/admit@callers', group: 'floor', store: 'redis', serverIr: 101_000 });
  const fastifyRun = results([...RUN.rows, floor], 'fastify-run');
  const koaRun = results(RUN.rows.slice(0, 3).map(koa), 'koa-run');

  it('marks every goal of each framework and load met or missed, and says which were not measured', () => {
    const table = verdictTable(mergeResults('before', [fastifyRun, koaRun]));
    const lines = table.split('\n');
    expect(lines).toHaveLength(4);
    // Fastify: memory met, Redis missed, per decision missed, rejecting in memory met, Redis rejecting not measured; moonshot +100k against 1k + 30k + 15k.
    expect(lines[2]).toBe(
      '| 10,000 callers (X-Forwarded-For) | fastify | +30.0k against +34.0k: met | +100.0k against +68.0k: **missed** | 90.0k against 51.0k: **missed** | −1.0k against +0.0k: met | not measured | +100.0k against +46.0k: **missed** |',
    );
    expect(lines[3]).toBe('| 10,000 callers (X-Forwarded-For) | koa | +30.0k against +34.0k: met | not measured | not measured | not measured | not measured | not measured |');
  });

  it('renders several runs as one block, each run with its line, and refuses a framework and load in two runs', () => {
    const block = renderInstructions(mergeResults('before', [fastifyRun, koaRun]));
    expect(block).toContain('Run `fastify-run`');
    expect(block).toContain('Run `koa-run`');
    expect(block).toContain('| 10,000 callers (X-Forwarded-For) | koa (100.0k) |');
    // One subject before 10,000 callers, and the page's order of frameworks (fastify before koa), whatever the runs' order.
    const oneKoa = results(RUN.rows.slice(0, 3).map(koa).map((r) => ({ ...r, load: 'one' as const, id: r.id.replace('@callers', '') })), 'koa-one');
    const order = verdictTable(mergeResults('x', [koaRun, fastifyRun, oneKoa])).split('\n').slice(2).map((l) => l.split(' | ').slice(0, 2).join(' | '));
    expect(order).toEqual(['| one subject | koa', '| 10,000 callers (X-Forwarded-For) | fastify', '| 10,000 callers (X-Forwarded-For) | koa']);
    expect(() => mergeResults('x', [fastifyRun, results(RUN.rows, 'again')])).toThrow('fastify, callers: in runs fastify-run and again');
    // Another warm-up for another framework: each run's line says which; other loads (callers) never.
    const koa8000 = { ...koaRun, settings: { ...koaRun.settings, warmup: 8000 } };
    expect(renderInstructions(mergeResults('x', [fastifyRun, koa8000]))).toContain('8,000 warm-up');
    expect(() => mergeResults('x', [fastifyRun, { ...koaRun, settings: { ...koaRun.settings, callers: 5000 } }])).toThrow('callers 5000');
  });
});
