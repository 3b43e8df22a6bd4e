// The flood bench's logic on made-up answers (no Redis): admissions summed per subject, waits pooled, the outage split, runs recorded and the page's section spliced.
import { overAdmissionBound } from '../src/bounds';
import { floodScenarios, parseFloodArgs, QUICK } from '../src/flood';
import {
  FLOOD_END,
  FLOOD_START,
  floodGoalMisses,
  floodSection,
  formatReasons,
  percentile,
  recordRun,
  spliceFloodSection,
  summarizeBursts,
  summarizeOutage,
  type FloodScenario,
} from '../src/flood-report';
import type { FloodAnswers } from '../src/flood-worker';
import type { FloodOutageRow, FloodRun, FloodScenarioRow } from '../src/types';

function answers(partial: Partial<FloodAnswers>): FloodAnswers {
  return {
    type: 'answers',
    pid: 1,
    deadlineMs: 100,
    decisions: 0,
    byReason: {},
    degraded: 0,
    admittedBySubject: {},
    waitsMs: [],
    overAllowance: 0,
    worstExcessMs: -50,
    maxLoopStallMs: 0,
    cpuMs: 0,
    rejected: 0,
    ...partial,
  };
}

const ONE: FloodScenario = { id: 'cluster/one/off/fixed-window', topology: 'cluster', subjects: 'one', coalesce: 'off', algorithm: 'fixed-window', processes: 2, inFlight: 4, limit: 3 };

describe('summarizeBursts', () => {
  it("adds one subject's admissions over the processes that share it, never over repetitions", () => {
    const rep1 = [
      answers({ decisions: 4, byReason: { allowed: 2, 'fail-open': 2 }, degraded: 2, admittedBySubject: { s1: 4 }, waitsMs: [1, 2, 150, 150], cpuMs: 1 }),
      answers({ decisions: 4, byReason: { allowed: 1, limited: 1, blocked: 2 }, admittedBySubject: { s1: 1 }, waitsMs: [1, 2, 3, 4], maxLoopStallMs: 30 }),
    ];
    const rep2 = [
      answers({ decisions: 4, byReason: { allowed: 2, blocked: 2 }, admittedBySubject: { s2: 2 }, waitsMs: [5, 5, 5, 5], overAllowance: 1, worstExcessMs: 12 }),
      answers({ decisions: 4, byReason: { allowed: 1, blocked: 3 }, admittedBySubject: { s2: 1 }, waitsMs: [6, 6, 6, 6] }),
    ];
    const row = summarizeBursts(ONE, [rep1, rep2]);
    expect(row).toMatchObject({
      repetitions: 2,
      decisions: 16,
      admittedPerRepetition: [5, 3],
      // s1 got 5 of 3: 2 past its limit; s2 exactly 3.
      maxAdmittedPerSubject: 5,
      overLimitTotal: 2,
      byReason: { allowed: 6, 'fail-open': 2, limited: 1, blocked: 7 },
      degraded: 2,
      withoutStore: 9,
      deadlineMs: 100,
      maxWaitMs: 150,
      overAllowance: 1,
      worstExcessMs: 12,
      maxLoopStallMs: 30,
      // 1 ms of CPU over 16 decisions.
      cpuUsPerDecision: 62.5,
    });
    expect(row.p99WaitMs).toBe(150);
  });

  it('counts every fresh subject on its own: none of them over a limit of 3', () => {
    const fresh = { ...ONE, subjects: 'fresh' as const };
    const row = summarizeBursts(fresh, [[answers({ decisions: 3, admittedBySubject: { a: 1, b: 1, c: 1 } }), answers({ decisions: 1, admittedBySubject: { d: 1 } })]]);
    expect(row).toMatchObject({ admittedPerRepetition: [4], maxAdmittedPerSubject: 1, overLimitTotal: 0 });
  });
});

describe('summarizeOutage', () => {
  it("splits the caller's admissions at the moment Redis answered again, and judges them by src/bounds.ts", () => {
    const t = { fault: 'pause' as const, limit: 100, ratePerSecond: 800, outageFrom: 1_000, outageTo: 11_000, stoppedAt: 14_000 };
    const row = summarizeOutage(t, [
      answers({ decisions: 5, admittedAt: [1_001, 5_000, 10_999], waitsMs: [100, 1, 1, 1, 1] }),
      answers({ decisions: 2, admittedAt: [11_000, 13_000], waitsMs: [0.5, 0.5] }),
    ]);
    expect(row).toMatchObject({ outageMs: 10_000, processes: 2, admittedDuringOutage: 3, admittedAfter: 2, afterMs: 3_000, bound: overAdmissionBound(100, 2), maxWaitMs: 100 });
  });
});

describe('the bound', () => {
  it('is one limit of local shares across the instances, at least one each', () => {
    expect(overAdmissionBound(100, 8)).toBe(96);
    expect(overAdmissionBound(100, 1)).toBe(100);
    expect(overAdmissionBound(3, 8)).toBe(8);
  });
});

describe('percentile and reasons', () => {
  it('takes the nearest rank, and NaN for nothing', () => {
    const xs = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(xs, 0.99)).toBe(99);
    expect(percentile(xs, 1)).toBe(100);
    expect(percentile([7], 0.99)).toBe(7);
    expect(percentile([], 0.99)).toBeNaN();
  });

  it('lists reasons most first, as shares of all decisions', () => {
    expect(formatReasons({ allowed: 3, 'fail-open': 96, limited: 1, blocked: 0 }, 100)).toBe('fail-open 96%, allowed 3%, limited 1%');
    expect(formatReasons({ 'fail-local': 1 }, 400)).toBe('fail-local 0.3%');
    expect(formatReasons({}, 0)).toBe('none');
  });
});

describe('scenarios and options', () => {
  it('runs one subject per algorithm and a fresh subject per decision, uncoalesced and default, per topology', () => {
    const ids = floodScenarios('single', { ...QUICK, algorithms: ['fixed-window', 'gcra'] }).map((s) => s.id);
    expect(ids).toEqual([
      'single/one/off/fixed-window',
      'single/one/off/gcra',
      'single/fresh/off/sliding-window-counter',
      'single/one/default/fixed-window',
      'single/one/default/gcra',
      'single/fresh/default/sliding-window-counter',
      // Issue 49: 400 callers of limit 5 shared by every process; processes started just before the flood, one script per request, each algorithm.
      'single/callers/default/sliding-window-counter',
      'single/fresh-fleet/off/fixed-window',
      'single/fresh-fleet/off/gcra',
    ]);
    expect(floodScenarios('cluster', { ...QUICK, kinds: ['fresh-fleet'] }).map((s) => [s.id, s.fleet])).toEqual([['cluster/fresh-fleet/off/sliding-window-counter', 'fresh']]);
  });

  it("issue 49's goal: a one-subject row or an outage past 1.25x the limit is a miss, at 1.25x it is not", () => {
    const row = (id: string, most: number) => ({ id, limit: 100, maxAdmittedPerSubject: most }) as FloodScenarioRow;
    const outage = (admitted: number, joined?: number) => ({ fault: 'pause', limit: 100, admittedDuringOutage: admitted, joined }) as FloodOutageRow;
    expect(floodGoalMisses({ scenarios: [row('a', 125), row('b', 100)], outages: [outage(125, 4)] })).toEqual([]);
    expect(floodGoalMisses({ scenarios: [row('a', 126)], outages: [outage(196, 4)] })).toEqual([
      'a: 126 of 100 on one subject (goal 1.25x)',
      'outage pause (+4 joined): 196 of 100 while Redis was out (goal 1.25x)',
    ]);
    expect(parseFloodArgs(['--kinds', 'fresh-fleet', '--joiners', '0'])).toMatchObject({ settings: { kinds: ['fresh-fleet'], joiners: 0 } });
    expect(() => parseFloodArgs(['--kinds', 'race'])).toThrow(/--kinds: "race" is not one of one, fresh, fresh-fleet, callers/);
    expect(floodScenarios('single', { ...QUICK, kinds: ['callers'] })).toMatchObject([{ subjects: 'callers', limit: 5, coalesce: 'default' }]);
  });

  it("defaults to the issue's 8 x 400, limit 100; --quick keeps both topologies and one outage", () => {
    const full = parseFloodArgs([]);
    const quick = parseFloodArgs(['--quick', '--label', 'before']);
    if (typeof full === 'string' || typeof quick === 'string') throw new Error('no help asked');
    expect(parseFloodArgs(['--render'])).toBe('render');
    expect(full.settings).toMatchObject({ processes: 8, inFlight: 400, limit: 100, repetitions: 3, topologies: ['single', 'cluster'], outages: ['kill', 'pause'], outageMs: 10_000 });
    expect(quick).toMatchObject({ quick: true, label: 'before', docs: true, settings: { repetitions: 1, algorithms: ['sliding-window-counter'], outages: ['pause'] } });
    expect(parseFloodArgs(['--against', '../old', '--against-label', 'before', '--label', 'after'])).toMatchObject({ against: '../old', againstLabel: 'before', label: 'after' });
    expect(() => parseFloodArgs(['--topologies', 'sentinel'])).toThrow(/--topologies: "sentinel" is not one of single, cluster/);
    expect(() => parseFloodArgs(['--in-flight', '0'])).toThrow(/--in-flight: a whole number from 1/);
  });
});

function run(label: string, commit: string, admitted: number, outageAdmitted: number): FloodRun {
  const row = summarizeBursts(ONE, [[answers({ decisions: 8, byReason: { allowed: admitted, limited: 8 - admitted }, admittedBySubject: { s: admitted }, waitsMs: [276] })]]);
  const outage = summarizeOutage({ fault: 'kill', limit: 3, ratePerSecond: 10, outageFrom: 0, outageTo: 10_000, stoppedAt: 13_000 }, [
    answers({ decisions: outageAdmitted, admittedAt: Array.from({ length: outageAdmitted }, () => 1) }),
  ]);
  return {
    label,
    commit,
    dirty: false,
    date: '2026-12-01T11:00:00.000Z',
    command: 'pnpm bench:flood --quick',
    mode: 'quick',
    durationS: 60,
    machine: 'Test CPU, 2 cores',
    loadAverageStart: [1],
    loadAverageEnd: [2],
    scenarios: [row],
    outages: [outage],
    notes: ['a note'],
  };
}

describe('floodSection and spliceFloodSection', () => {
  const before = run('before', 'aaaaaaa', 5, 300);
  const after = run('after', 'bbbbbbb', 3, 1);

  it('records a run by its label: the same label replaced, a new one added', () => {
    expect(recordRun([before], after).map((r) => r.label)).toEqual(['before', 'after']);
    const again = run('before', 'ccccccc', 3, 0);
    expect(recordRun([before, after], again).map((r) => `${r.label} ${r.commit}`)).toEqual(['before ccccccc', 'after bbbbbbb']);
  });

  it('renders each run under its label and commit, and the runs side by side', () => {
    const md = floodSection([before, after]);
    expect(md.startsWith(`${FLOOD_START}\n## Flood`)).toBe(true);
    expect(md.endsWith(FLOOD_END)).toBe(true);
    expect(md).toContain('### before (commit aaaaaaa)');
    expect(md).toContain('### after (commit bbbbbbb)');
    expect(md).toContain('by `pnpm bench:flood --quick`');
    expect(md).toContain('| flood | before (commit aaaaaaa) | after (commit bbbbbbb) |');
    // Limit 3 with 2 processes: the bound is 2 x floor(3 / 2) = 2, so 5 is just within 3 + 2.
    expect(md).toContain(
      '| one subject (limit 3), `coalesce: false`, fixed-window, 3-master Cluster | 5 of 3 (1.67x) (✓ within 5); 0% without the store; longest 276 ms | 3 of 3 (✓ within 5); 0% without the store; longest 276 ms |',
    );
    expect(floodSection([run('x', 'eeeeeee', 6, 0)])).toContain('| **6 of 3 (2.00x)** | 5: ✗ past |');
    expect(md).toContain('| Redis killed while a caller floods (limit 3) | 300 admitted in 10.0 s (bound 3); longest n/a | 1 admitted in 10.0 s (bound 3); longest n/a |');
    expect(md).toContain('**300 of limit 3** (past the bound)');
    expect(md).toContain('**1 of limit 3** (within the bound)');
    expect(md).toContain('> a note');
    expect(floodSection([])).toBe('');
  });

  it('names a run labelled by its commit once', () => {
    expect(floodSection([run('commit ddddddd', 'ddddddd', 3, 0)])).toContain('### commit ddddddd\n');
  });

  it('replaces the section between its markers and keeps the rest of the page', () => {
    const page = '# Benchmarks\n\n## Races\n\nr\n\n## How this was measured\n\nh\n';
    const once = spliceFloodSection(page, floodSection([before]));
    expect(once.indexOf('## Races')).toBeLessThan(once.indexOf('## Flood'));
    expect(once.indexOf('## Flood')).toBeLessThan(once.indexOf('## How this was measured'));
    const twice = spliceFloodSection(once, floodSection([before, after]));
    expect(twice.match(/## Flood/g)).toHaveLength(1);
    expect(twice).toContain('### after (commit bbbbbbb)');
    expect(twice.endsWith('## How this was measured\n\nh\n')).toBe(true);
    // No section to show: the old one goes, the page is otherwise as it was.
    expect(spliceFloodSection(twice, '')).toBe(page);
    expect(spliceFloodSection('# Benchmarks\n', 'S')).toBe('# Benchmarks\n\nS\n');
  });
});
