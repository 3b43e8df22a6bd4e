// The flood section's logic without Redis: children's answers summed into rows, the rows rendered, the section spliced into docs/benchmarks-details.md, runs recorded by label.
import { OVERLOAD_GOAL_RATIO, overAdmissionBound } from './bounds';
import type { FloodAnswers } from './flood-worker';
import { sum } from './stats';
import type { FloodOutageRow, FloodRun, FloodScenarioRow } from './types';

/** The p-th percentile (0 < p <= 1) by the nearest-rank method; NaN for no values. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))];
}

function addCounts(into: Record<string, number>, from: Record<string, number>): void {
  for (const [k, v] of Object.entries(from)) into[k] = (into[k] ?? 0) + v;
}

/** Every answer of every process, summed: counts add, waits pool, worsts take the worst. */
function pool(answers: readonly FloodAnswers[]) {
  const byReason: Record<string, number> = {};
  const waits: number[] = [];
  for (const a of answers) {
    addCounts(byReason, a.byReason);
    for (const w of a.waitsMs) waits.push(w);
  }
  return {
    byReason,
    waits,
    decisions: sum(answers.map((a) => a.decisions)),
    degraded: sum(answers.map((a) => a.degraded)),
    deadlineMs: Math.max(...answers.map((a) => a.deadlineMs)),
    overAllowance: sum(answers.map((a) => a.overAllowance)),
    worstExcessMs: Math.max(...answers.map((a) => a.worstExcessMs)),
    maxLoopStallMs: Math.max(...answers.map((a) => a.maxLoopStallMs)),
    cpuMs: answers.every((a) => typeof a.cpuMs === 'number') ? sum(answers.map((a) => a.cpuMs)) : NaN,
    rejected: sum(answers.map((a) => a.rejected)),
  };
}

export type FloodScenario = Pick<FloodScenarioRow, 'id' | 'topology' | 'subjects' | 'coalesce' | 'fleet' | 'algorithm' | 'processes' | 'inFlight' | 'limit'>;

/**
 * One scenario's row from its repetitions (each: every process's answers to one burst). A subject's
 * admissions add up over processes (they share it through the store); a repetition has subjects of
 * its own, so subjects are never added across repetitions.
 */
export function summarizeBursts(scenario: FloodScenario, repetitions: readonly (readonly FloodAnswers[])[]): FloodScenarioRow {
  const all = repetitions.flat();
  const p = pool(all);
  const admittedPerRepetition: number[] = [];
  let maxAdmittedPerSubject = 0;
  let overLimitTotal = 0;
  for (const rep of repetitions) {
    const bySubject: Record<string, number> = {};
    for (const a of rep) addCounts(bySubject, a.admittedBySubject);
    const counts = Object.values(bySubject);
    admittedPerRepetition.push(sum(counts));
    for (const n of counts) {
      maxAdmittedPerSubject = Math.max(maxAdmittedPerSubject, n);
      overLimitTotal += Math.max(0, n - scenario.limit);
    }
  }
  return {
    ...scenario,
    repetitions: repetitions.length,
    decisions: p.decisions,
    admittedPerRepetition,
    maxAdmittedPerSubject,
    overLimitTotal,
    byReason: p.byReason,
    degraded: p.degraded,
    withoutStore: p.degraded + (p.byReason.blocked ?? 0),
    deadlineMs: p.deadlineMs,
    p99WaitMs: percentile(p.waits, 0.99),
    maxWaitMs: p.waits.length ? Math.max(...p.waits) : NaN,
    overAllowance: p.overAllowance,
    worstExcessMs: p.worstExcessMs,
    maxLoopStallMs: p.maxLoopStallMs,
    ...(Number.isFinite(p.cpuMs) && p.decisions > 0 ? { cpuUsPerDecision: Math.round((p.cpuMs * 10_000) / p.decisions) / 10 } : {}),
    rejected: p.rejected,
  };
}

export interface OutageTimes {
  fault: FloodOutageRow['fault'];
  limit: number;
  ratePerSecond: number;
  /** Epoch ms: the fault struck (the flood began with it), Redis answered again, the flood stopped. */
  outageFrom: number;
  outageTo: number;
  stoppedAt: number;
  /** Processes the autoscaler phase started halfway through the outage (among `answers`). */
  joined?: number;
}

/** The outage run's row: the flooding caller's admissions split at the moment Redis answered again. */
export function summarizeOutage(t: OutageTimes, answers: readonly FloodAnswers[]): FloodOutageRow {
  const p = pool(answers);
  const at = answers.flatMap((a) => a.admittedAt ?? []);
  return {
    fault: t.fault,
    outageMs: Math.round(t.outageTo - t.outageFrom),
    processes: answers.length,
    limit: t.limit,
    ratePerSecond: t.ratePerSecond,
    decisions: p.decisions,
    admittedDuringOutage: at.filter((x) => x < t.outageTo).length,
    admittedAfter: at.filter((x) => x >= t.outageTo).length,
    afterMs: Math.round(t.stoppedAt - t.outageTo),
    bound: overAdmissionBound(t.limit, answers.length - (t.joined ?? 0), t.joined ?? 0),
    ...(t.joined ? { joined: t.joined } : {}),
    byReason: p.byReason,
    degraded: p.degraded,
    deadlineMs: p.deadlineMs,
    p99WaitMs: percentile(p.waits, 0.99),
    maxWaitMs: p.waits.length ? Math.max(...p.waits) : NaN,
    overAllowance: p.overAllowance,
    worstExcessMs: p.worstExcessMs,
    maxLoopStallMs: p.maxLoopStallMs,
    rejected: p.rejected,
  };
}

/**
 * Issue 49's goal check: every one-subject row's most on one subject, every fresh-subject row's, and
 * every outage's admissions while Redis was out, at most OVERLOAD_GOAL_RATIO x the limit. One line
 * per miss; `pnpm bench:flood` fails (exit 1) when there is any.
 */
export function floodGoalMisses(run: Pick<FloodRun, 'scenarios' | 'outages'>): string[] {
  const misses: string[] = [];
  for (const r of run.scenarios) {
    if (r.maxAdmittedPerSubject > OVERLOAD_GOAL_RATIO * r.limit) misses.push(`${r.id}: ${r.maxAdmittedPerSubject} of ${r.limit} on one subject (goal ${OVERLOAD_GOAL_RATIO}x)`);
  }
  for (const o of run.outages) {
    if (o.admittedDuringOutage > OVERLOAD_GOAL_RATIO * o.limit) misses.push(`outage ${o.fault}${o.joined ? ` (+${o.joined} joined)` : ''}: ${o.admittedDuringOutage} of ${o.limit} while Redis was out (goal ${OVERLOAD_GOAL_RATIO}x)`);
  }
  return misses;
}

/** `runs` with `run` recorded: it replaces the run of the same label, else it is added at the end. */
export function recordRun(runs: readonly FloodRun[], run: FloodRun): FloodRun[] {
  const at = runs.findIndex((r) => r.label === run.label);
  if (at < 0) return [...runs, run];
  const out = [...runs];
  out[at] = run;
  return out;
}

const int = (x: number) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : 'n/a');
const ms = (x: number) => (Number.isFinite(x) ? `${x < 10 ? x.toFixed(1) : Math.round(x).toLocaleString('en-US')} ms` : 'n/a');
const pct = (part: number, whole: number) => {
  if (!(whole > 0)) return 'n/a';
  const x = (part / whole) * 100;
  return `${x > 0 && x < 1 ? x.toFixed(1) : Math.round(x)}%`;
};

function table(head: string[], rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.map((c) => c.replace(/\|/g, '\\|')).join(' | ')} |`;
  return [line(head), line(head.map(() => '---')), ...rows.map(line)].join('\n');
}

/** Reasons by count, most first, each as a share of all decisions: "fail-open 48%, allowed 3%". */
export function formatReasons(byReason: Record<string, number>, decisions: number): string {
  const entries = Object.entries(byReason).filter(([, n]) => n > 0);
  if (entries.length === 0) return 'none';
  return entries
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([reason, n]) => `${reason} ${pct(n, decisions)}`)
    .join(', ');
}

/** What a scenario is, in words. */
export function scenarioLabel(r: Pick<FloodScenarioRow, 'subjects' | 'coalesce' | 'fleet' | 'limit' | 'algorithm'>): string {
  const who = r.subjects === 'one' ? `one subject (limit ${r.limit})` : r.subjects === 'callers' ? `400 callers, each decision on the next (limit ${r.limit} each)` : 'a fresh subject per decision';
  const fleet = r.fleet === 'fresh' ? ', processes started just before (fresh fleet)' : '';
  return `${who}${fleet}, ${r.coalesce === 'off' ? '`coalesce: false`' : 'default (coalesced)'}, ${r.algorithm}`;
}
const topologyLabel = (t: FloodScenarioRow['topology']) => (t === 'cluster' ? '3-master Cluster' : 'one Redis');

/** "21.71x" of the limit: the most one subject got over its limit. */
const timesLimit = (r: FloodScenarioRow) => `${int(r.maxAdmittedPerSubject)} of ${int(r.limit)}${r.maxAdmittedPerSubject > r.limit ? ` (${(r.maxAdmittedPerSubject / r.limit).toFixed(2)}x)` : ''}`;
/** The limit plus the bound of src/bounds.ts for the scenario's processes: what "no subject past its limit plus the bound" allows. */
const ceilingOf = (r: FloodScenarioRow) => r.limit + overAdmissionBound(r.limit, r.processes);
const withinCeiling = (r: FloodScenarioRow) => (r.maxAdmittedPerSubject <= ceilingOf(r) ? '✓ within' : '✗ past');

function runHeading(run: FloodRun): string {
  const dirty = run.dirty ? ', with uncommitted changes' : '';
  return run.label === `commit ${run.commit}` ? `${run.label}${dirty ? ` (${dirty.slice(2)})` : ''}` : `${run.label} (commit ${run.commit}${dirty})`;
}

function scenarioTable(rows: readonly FloodScenarioRow[]): string {
  return table(
    ['flood', 'Redis', 'admitted per repetition', 'most on one subject', 'limit + bound (src/bounds.ts)', 'over the limit, in all', 'decided without the store', 'decisions by reason', 'p99 wait', 'longest wait', 'past deadline + 50 ms + loop stall', 'longest loop stall', 'process CPU per decision'],
    rows.map((r) => [
      scenarioLabel(r),
      topologyLabel(r.topology),
      r.admittedPerRepetition.map(int).join(', '),
      r.subjects === 'one' ? `**${timesLimit(r)}**` : timesLimit(r),
      `${int(ceilingOf(r))}: ${withinCeiling(r)}`,
      int(r.overLimitTotal),
      `**${pct(r.withoutStore, r.decisions)}** (degraded ${pct(r.degraded, r.decisions)})`,
      formatReasons(r.byReason, r.decisions) + (r.rejected ? `; ${int(r.rejected)} rejected` : ''),
      ms(r.p99WaitMs),
      `**${ms(r.maxWaitMs)}**`,
      `${int(r.overAllowance)}${r.overAllowance ? ` (worst by ${ms(r.worstExcessMs)})` : ''}`,
      ms(r.maxLoopStallMs),
      r.cpuUsPerDecision === undefined ? 'n/a' : `${r.cpuUsPerDecision.toFixed(0)} µs`,
    ]),
  );
}

function outageTable(rows: readonly FloodOutageRow[]): string {
  return table(
    ['fault', 'the caller sent', 'admitted while Redis was out', 'bound (src/bounds.ts)', 'admitted after it answered', 'decisions by reason', 'p99 wait', 'longest wait', 'past deadline + 50 ms + loop stall', 'longest loop stall'],
    rows.map((r) => [
      `${r.fault === 'kill' ? 'killed (SIGKILL), then restarted' : 'paused (SIGSTOP), then SIGCONT'}: ${(r.outageMs / 1000).toFixed(1)} s`,
      `${int(r.ratePerSecond)}/s from ${r.processes} processes, ${int(r.decisions)} decisions`,
      `**${int(r.admittedDuringOutage)} of limit ${int(r.limit)}** ${r.admittedDuringOutage <= r.bound ? '(within' : '(past'} the bound)`,
      int(r.bound),
      `${int(r.admittedAfter)} in ${(r.afterMs / 1000).toFixed(1)} s`,
      formatReasons(r.byReason, r.decisions) + (r.rejected ? `; ${int(r.rejected)} rejected` : ''),
      ms(r.p99WaitMs),
      ms(r.maxWaitMs),
      `${int(r.overAllowance)}${r.overAllowance ? ` (worst by ${ms(r.worstExcessMs)})` : ''}`,
      ms(r.maxLoopStallMs),
    ]),
  );
}

/** One line per scenario, one column per run: the figures issue 24 asks about, side by side. */
function comparisonTable(runs: readonly FloodRun[]): string {
  const ids = [...new Set(runs.flatMap((r) => r.scenarios.map((s) => s.id)))];
  const rows = ids.map((id) => {
    const any = runs.flatMap((r) => r.scenarios).find((s) => s.id === id)!;
    return [
      `${scenarioLabel(any)}, ${topologyLabel(any.topology)}`,
      ...runs.map((run) => {
        const r = run.scenarios.find((s) => s.id === id);
        return r ? `${timesLimit(r)} (${withinCeiling(r)} ${int(ceilingOf(r))}); ${pct(r.withoutStore, r.decisions)} without the store; longest ${ms(r.maxWaitMs)}` : 'not run';
      }),
    ];
  });
  const faults = [...new Set(runs.flatMap((r) => r.outages.map((o) => o.fault)))];
  for (const fault of faults) {
    rows.push([
      `Redis ${fault === 'kill' ? 'killed' : 'paused'} while a caller floods (limit ${runs.flatMap((r) => r.outages).find((o) => o.fault === fault)!.limit})`,
      ...runs.map((run) => {
        const o = run.outages.find((x) => x.fault === fault);
        return o ? `${int(o.admittedDuringOutage)} admitted in ${(o.outageMs / 1000).toFixed(1)} s (bound ${int(o.bound)}); longest ${ms(o.maxWaitMs)}` : 'not run';
      }),
    ]);
  }
  return table(['flood', ...runs.map(runHeading)], rows);
}

export const FLOOD_START = '<!-- flood: rendered by bench/src/flood-report.ts from bench/flood-runs.json -->';
export const FLOOD_END = '<!-- /flood -->';

/** The page's Flood section, between its markers; an empty string when no run is recorded. */
export function floodSection(runs: readonly FloodRun[]): string {
  if (runs.length === 0) return '';
  const s0 = runs[runs.length - 1].scenarios[0] ?? runs[0].scenarios[0];
  const out: string[] = [FLOOD_START, '## Flood', ''];
  out.push(
    `What a flood does to the limit (issue #24). ${s0 ? `${s0.processes} processes each make ${s0.inFlight} decisions at once` : 'Several processes each make many decisions at once'} through Floodgate's core (\`createLimiter\` on a \`RedisStore\`) ` +
      'with no failure option at all, so each run measures the failure defaults of the commit it ran on; `coalesce: false` or no `coalesce` option. "One subject": every decision on one subject (limit ' +
      `${s0?.limit ?? 100} per hour; token-bucket and gcra a burst of as many, refilled 1 per hour); "a fresh subject": each decision a subject of its own. ` +
      'Every admission counts against the limit, whoever made it (the store, or a failure mode). "Decided without the store": degraded decisions (fail-open, fail-local, ...) and block-cache denials. ' +
      'A wait is from `consume()` to its answer; each is judged against the store\'s deadline (RedisStore `timeoutMs`) + 50 ms + the time its own process\'s event loop stood still meanwhile (measured every 10 ms: each tick\'s lateness is a span the loop could not run, and a wait is owed the part of those spans that overlaps it, so an answer delivered in the middle of a long block is owed the part of the block before it). "Process CPU per decision" is what the flooding processes spent per decision (user + system), the work the loop stalls are mostly made of on a starved CPU. ' +
      'The outage run: each process first sends a little traffic on fresh subjects to a healthy Redis, then Redis is killed or paused and, at that moment, one caller starts flooding and keeps on through the outage and after it; ' +
      'its admissions while Redis was out are set against the bound in `bench/src/bounds.ts` (each process\'s local share, floor(limit / processes), across the processes: the bound docs/failure-modes.md#the-bound-on-over-admission documents). ' +
      'Runs are recorded by label in `bench/flood-runs.json`; `pnpm bench:flood --label NAME` measures this checkout and replaces the run of that name.',
  );
  out.push('');
  if (runs.length > 1) {
    out.push('### Side by side');
    out.push('');
    out.push(comparisonTable(runs));
    out.push('');
  }
  for (const run of runs) {
    out.push(`### ${runHeading(run)}`);
    out.push('');
    out.push(
      `Measured ${run.date.slice(0, 16).replace('T', ' ')} UTC by \`${run.command}\` (${run.mode}, ${Math.round(run.durationS)} s) on ${run.machine}; ` +
        `load average ${run.loadAverageStart[0] ?? '?'} at start, ${run.loadAverageEnd[0] ?? '?'} at the end. Deadline ${ms(run.scenarios[0]?.deadlineMs ?? run.outages[0]?.deadlineMs ?? NaN)} (RedisStore's default \`timeoutMs\`).`,
    );
    for (const note of run.notes) out.push(`> ${note}`);
    out.push('');
    if (run.scenarios.length) {
      out.push(scenarioTable(run.scenarios));
      out.push('');
    }
    if (run.outages.length) {
      out.push(outageTable(run.outages));
      out.push('');
    }
  }
  out.push(FLOOD_END);
  return out.join('\n');
}

/**
 * The page with its Flood section replaced by `section` (between the markers), or, on a page that
 * has none yet, inserted before "## How this was measured" (at the end when that is missing too).
 */
export function spliceFloodSection(page: string, section: string): string {
  const from = page.indexOf(FLOOD_START);
  const to = page.indexOf(FLOOD_END);
  if (from >= 0 && to > from) {
    const rest = page.slice(to + FLOOD_END.length).replace(/^\n+/, '');
    return `${page.slice(0, from)}${section ? `${section}\n\n` : ''}${rest}`;
  }
  if (!section) return page;
  const before = page.indexOf('## How this was measured');
  if (before < 0) return `${page.replace(/\n*$/, '\n\n')}${section}\n`;
  return `${page.slice(0, before)}${section}\n\n${page.slice(before)}`;
}
