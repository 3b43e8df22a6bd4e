// `pnpm bench:instructions`' tables: the summary per framework and load, the goals of issue #44, every row, and two runs compared.
import { INSTR_LOADS, LOAD_TITLES, type InstrLoad, type InstrResults, type InstrRow } from './instructions-types';
import { FRAMEWORKS, type Framework } from './types';

const k = (ir: number) => `${(ir / 1000).toFixed(1)}k`;
const signed = (ir: number) => `${ir >= 0 ? '+' : '−'}${k(Math.abs(ir))}`;
const cell = (ir: number | undefined) => (ir === undefined ? '' : signed(ir));

/** One framework in one load: the bare route's count and each row's count added over it. */
export interface FrameworkLoad {
  framework: Framework;
  load: InstrLoad;
  bare: number | undefined;
  rows: InstrRow[];
}

export function groups(rows: readonly InstrRow[]): FrameworkLoad[] {
  const out: FrameworkLoad[] = [];
  for (const row of rows) {
    let g = out.find((x) => x.framework === row.framework && x.load === row.load);
    if (!g) out.push((g = { framework: row.framework, load: row.load, bare: undefined, rows: [] }));
    g.rows.push(row);
    if (row.group === 'ceiling') g.bare = row.serverIr;
  }
  // Per load, then in the page's order of frameworks, whatever order the rows came in (several runs rendered as one block).
  const rank = (g: FrameworkLoad) => INSTR_LOADS.indexOf(g.load) * FRAMEWORKS.length + FRAMEWORKS.indexOf(g.framework);
  return out.sort((a, b) => rank(a) - rank(b));
}

/** A row's server instructions over the bare route of its own run (a reused row's `bareIr`; else this run's). */
const added = (g: FrameworkLoad, row: InstrRow | undefined) => {
  const bare = row?.bareIr ?? g.bare;
  return row && bare !== undefined ? row.serverIr - bare : undefined;
};
const isFloodgate = (row: InstrRow) => row.group === 'floodgate';

/** The row of Floodgate, or the best (fewest server instructions) peer, in a store and regime. */
export function pick(g: FrameworkLoad, who: 'floodgate' | 'peer', store: 'memory' | 'redis', regime: 'admit' | 'reject'): InstrRow | undefined {
  const candidates = g.rows.filter((r) => r.store === store && r.regime === regime && (who === 'floodgate' ? isFloodgate(r) : r.group === 'peer'));
  return candidates.sort((a, b) => a.serverIr - b.serverIr)[0];
}

const peerName = (row: InstrRow | undefined) => (row ? ` ${row.label.replace(/ \(.*\)$/, '')}` : '');
const calls = (row: InstrRow | undefined) => (row?.scriptCalls === null || row?.scriptCalls === undefined ? '' : ` (${row.scriptCalls.toFixed(2)} calls)`);
const redisPer = (row: InstrRow | undefined) => (row?.redisIr === null || row?.redisIr === undefined ? '–' : k(row.redisIr));

/** The summary: one row per framework and load, added server instructions per request over its bare route. */
export function summaryTable(results: InstrResults): string {
  const lines = [
    '| load | framework (bare route) | Floodgate on Redis | best Redis peer | floor (one PING per turn) | Floodgate in memory | best in-memory peer | Redis instructions per request: Floodgate / best peer | rejecting: Floodgate memory / Redis / best peer |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const g of groups(results.rows)) {
    const fgRedis = pick(g, 'floodgate', 'redis', 'admit');
    const peerRedis = pick(g, 'peer', 'redis', 'admit');
    const fgMem = pick(g, 'floodgate', 'memory', 'admit');
    const peerMem = pick(g, 'peer', 'memory', 'admit');
    const floor = g.rows.find((r) => r.group === 'floor');
    const rej = [pick(g, 'floodgate', 'memory', 'reject'), pick(g, 'floodgate', 'redis', 'reject'), pick(g, 'peer', 'redis', 'reject') ?? pick(g, 'peer', 'memory', 'reject')];
    lines.push(
      `| ${LOAD_TITLES[g.load]} | ${g.framework} (${g.bare === undefined ? '?' : k(g.bare)}) | ${cell(added(g, fgRedis))}${calls(fgRedis)} | ${cell(added(g, peerRedis))}${peerName(peerRedis)}${calls(peerRedis)} | ${cell(added(g, floor))} | ${cell(added(g, fgMem))} | ${cell(added(g, peerMem))}${peerName(peerMem)} | ${redisPer(fgRedis)} / ${redisPer(peerRedis)} | ${rej.map((r) => cell(added(g, r)) || '–').join(' / ')}${peerName(rej[2])} |`,
    );
  }
  return lines.join('\n');
}

/** Issue #44's goals, in the verdict table's column order. */
export const GOALS = {
  memory: 'memory, admitting: added ≤ 0.85 × best in-memory peer',
  redis: 'Redis, admitting: added ≤ 0.85 × best Redis peer',
  perDecision: 'Redis instructions per decision ≤ 0.85 × best peer',
  memoryReject: 'memory, rejecting: at or below the bare route',
  redisReject: 'Redis, rejecting: at or below the bare route',
  moonshot: 'Redis, admitting (moonshot): added ≤ floor + memory path + 15k',
} as const;
export type GoalKey = keyof typeof GOALS;

interface Goal {
  framework: Framework;
  load: InstrLoad;
  key: GoalKey;
  goal: string;
  figure: number | undefined;
  bound: number | undefined;
}

/** Issue #44's goals, from one run: 0.85 of the best peer (added instructions; Redis per decision), rejecting at or below the bare route, and the moonshot. */
export function goals(results: InstrResults): Goal[] {
  const out: Goal[] = [];
  for (const g of groups(results.rows)) {
    const bound = (row: InstrRow | undefined, of: (r: InstrRow) => number | undefined) => (row ? ((of(row) ?? NaN) * 0.85) : undefined);
    const add = (key: GoalKey, figure: number | undefined, b: number | undefined) => {
      if (figure !== undefined && b !== undefined && Number.isFinite(b)) out.push({ framework: g.framework, load: g.load, key, goal: GOALS[key], figure, bound: b });
    };
    const peerMem = pick(g, 'peer', 'memory', 'admit');
    const peerRedis = pick(g, 'peer', 'redis', 'admit');
    const fgRedis = pick(g, 'floodgate', 'redis', 'admit');
    const fgMem = added(g, pick(g, 'floodgate', 'memory', 'admit'));
    const floor = added(g, g.rows.find((r) => r.group === 'floor'));
    add('memory', fgMem, bound(peerMem, (r) => added(g, r)));
    add('redis', added(g, fgRedis), bound(peerRedis, (r) => added(g, r)));
    // One connection: every script call carries one decision, so Redis's instructions per request are per decision.
    add('perDecision', fgRedis?.redisIr ?? undefined, bound(peerRedis, (r) => r.redisIr ?? undefined));
    add('memoryReject', added(g, pick(g, 'floodgate', 'memory', 'reject')), 0);
    add('redisReject', added(g, pick(g, 'floodgate', 'redis', 'reject')), 0);
    add('moonshot', added(g, fgRedis), floor !== undefined && fgMem !== undefined ? floor + fgMem + 15_000 : undefined);
  }
  return out;
}

/** The verdicts: one row per load and framework, one column per goal, each cell the figure, its bound and met or missed. */
export function verdictTable(results: InstrResults): string {
  const keys = Object.keys(GOALS) as GoalKey[];
  const titles: Record<GoalKey, string> = {
    memory: 'memory, admitting (≤ 0.85 × peer)',
    redis: 'Redis, admitting (≤ 0.85 × peer)',
    perDecision: 'Redis instructions a decision (≤ 0.85 × peer)',
    memoryReject: 'memory, rejecting (≤ bare route)',
    redisReject: 'Redis, rejecting (≤ bare route)',
    moonshot: 'moonshot: Redis ≤ floor + memory + 15k',
  };
  const lines = [`| load | framework | ${keys.map((key) => titles[key]).join(' | ')} |`, `| --- | --- |${keys.map(() => ' --- |').join('')}`];
  const all = goals(results);
  for (const g of groups(results.rows)) {
    const cells = keys.map((key) => {
      const goal = all.find((x) => x.framework === g.framework && x.load === g.load && x.key === key);
      if (!goal) return 'not measured';
      const fmt = key === 'perDecision' ? k : signed;
      return `${fmt(goal.figure!)} against ${fmt(goal.bound!)}: ${goal.figure! <= goal.bound! ? 'met' : '**missed**'}`;
    });
    lines.push(`| ${LOAD_TITLES[g.load]} | ${g.framework} | ${cells.join(' | ')} |`);
  }
  return lines.join('\n');
}

/** Every row: instructions per request of the server and of Redis, script calls, answers. */
export function detailTable(results: InstrResults): string {
  const lines = [
    '| load | contender | regime | server Ir / request | added over bare | V8 compiling / request (left out) | V8 major GC / request (left out) | of which collector | Redis Ir / request | Redis Ir / script call | script calls / request | Redis commands / request | 2xx / 429 / errors |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const g of groups(results.rows)) {
    for (const r of g.rows) {
      const perCall = r.redisIr !== null && r.scriptCalls ? k(r.redisIr / r.scriptCalls) : '–';
      lines.push(
        `| ${g.load} | ${g.framework}: ${r.label}${r.from ? ` (run \`${r.from}\`)` : ''} | ${r.regime ?? '–'} | ${k(r.serverIr)} | ${r.group === 'ceiling' ? '–' : cell(added(g, r))} | ${r.compileIr === undefined ? '–' : k(r.compileIr)} | ${r.majorGcIr === undefined ? 'counted' : k(r.majorGcIr)} | ${r.gcIr === undefined ? '–' : k(r.gcIr)} | ${r.redisIr === null ? '–' : k(r.redisIr)} | ${perCall} | ${r.scriptCalls === null ? '–' : r.scriptCalls.toFixed(2)} | ${r.redisCommands === null ? '–' : r.redisCommands.toFixed(2)} | ${r.ok} / ${r.limited} / ${r.errors} |`,
      );
    }
  }
  return lines.join('\n');
}

/**
 * What the reader must know about the rows' origin: rows taken from other runs, and how far this
 * run's bare route is from theirs (the same code, so a check that the runs count alike).
 */
export function provenance(results: InstrResults): string[] {
  const out: string[] = [];
  const from = [...new Set(results.rows.flatMap((r) => (r.from ? [r.from] : [])))];
  if (from.length > 0) {
    let worst = 0;
    for (const g of groups(results.rows)) {
      for (const r of g.rows) if (r.bareIr !== undefined && g.bare !== undefined) worst = Math.max(worst, Math.abs(g.bare - r.bareIr) / r.bareIr);
    }
    out.push(
      `Peers and floors taken from run${from.length > 1 ? 's' : ''} ${from.map((f) => `\`${f}\``).join(', ')} (same settings; no Floodgate code runs in them), each added over its own run's bare route; the bare route, the same code in both, differs by at most ${(worst * 100).toFixed(1)}% between the runs.`,
    );
  }
  return out.flatMap((line) => [line, '']);
}

/** How a run was made: commit, machine, command, settings, time and CPU. */
function runLine(results: InstrResults): string {
  const s = results.settings;
  return `Run \`${results.label}\`: commit ${results.commit}${results.codeCommit ? ` (Floodgate's code, packages/, as of ${results.codeCommit})` : ''}, ${results.date}, ${results.machine}; \`${results.command}\`; ${s.warmup.toLocaleString('en-US')} warm-up (uninstrumented), ${(s.settle ?? 0).toLocaleString('en-US')} settling and ${s.requests.toLocaleString('en-US')} counted requests per contender, ${s.connections} connection${s.connections === 1 ? '' : 's'}, ${s.parallel} at a time; ${results.takenOnly ? 'measured nothing itself: its rows are those of the runs it resumes and reuses (`--taken-only`)' : `${Math.round(results.durationS / 60)} min${coreSeconds(results)}`}${results.partial ? `; **stopped after ${results.partial.measured} of ${results.partial.planned} contenders** (the rows a goal reads first; the others are blank or "not measured")` : ''}.`;
}

/**
 * Several runs as one block (`--render A,B`): each framework and load from one run (a row's added
 * instructions are counted over its own run's bare route, and a goal compares rows of one framework
 * and load, so of one run); each run's line kept, with its settings. Two runs' counts (connections,
 * callers) must agree: the loads must be the same loads; warm-up, settling and counted requests may
 * differ from one framework to another.
 */
export function mergeResults(label: string, runs: readonly InstrResults[]): InstrResults {
  if (runs.length === 1) return { ...runs[0], label };
  const [first] = runs;
  const rows: InstrRow[] = [];
  const owners = new Map<string, string>();
  for (const run of runs) {
    for (const key of ['connections', 'callers'] as const) {
      if (run.settings[key] !== first.settings[key]) throw new Error(`run ${run.label}: ${key} ${run.settings[key]}, run ${first.label}: ${first.settings[key]}; the runs were counted differently`);
    }
    for (const row of run.rows) {
      const key = `${row.framework}, ${row.load}`;
      const owner = owners.get(key) ?? run.label;
      if (owner !== run.label) throw new Error(`${key}: in runs ${owner} and ${run.label}; each framework and load must come from one run`);
      owners.set(key, owner);
    }
    rows.push(...run.rows);
  }
  return { ...first, label, rows, sources: [...runs], partial: undefined, durationS: runs.reduce((t, r) => t + r.durationS, 0) };
}

/** The run's CPU cost, when recorded: core-seconds in all and per contender measured. */
function coreSeconds(results: InstrResults): string {
  const measured = results.rows.filter((r) => !r.from).length;
  return results.coreS === undefined || measured === 0 ? '' : `, ${Math.round(results.coreS).toLocaleString('en-US')} core-seconds (${Math.round(results.coreS / measured)} a contender)`;
}

/** The run's whole section: how it was made, the summary, the goals and every row. */
export function renderInstructions(results: InstrResults): string {
  return [
    ...(results.sources ?? [results]).flatMap((run) => [runLine(run), '']),
    ...provenance(results),
    'Added server instructions per request over the same framework\'s bare route (k = thousand instructions):',
    '',
    summaryTable(results),
    '',
    'Goals of issue #44 (figure against its bound):',
    '',
    verdictTable(results),
    '',
    '<details><summary>Every row</summary>',
    '',
    detailTable(results),
    '',
    '</details>',
  ].join('\n');
}

/** Two runs side by side: each row's server and Redis instructions per request and how far apart they are. */
export function compareTable(a: InstrResults, b: InstrResults): { table: string; worst: number } {
  const lines = [`| contender | server: ${a.label} | ${b.label} | diff | Redis: ${a.label} | ${b.label} | diff |`, '| --- | --- | --- | --- | --- | --- | --- |'];
  let worst = 0;
  const diff = (x: number, y: number) => {
    const d = Math.abs(y - x) / Math.max(x, 1);
    worst = Math.max(worst, d);
    return `${(d * 100).toFixed(2)}%`;
  };
  for (const ra of a.rows) {
    const rb = b.rows.find((r) => r.id === ra.id);
    if (!rb) continue;
    const redis = ra.redisIr !== null && rb.redisIr !== null ? `${k(ra.redisIr)} | ${k(rb.redisIr)} | ${diff(ra.redisIr, rb.redisIr)}` : '– | – | –';
    lines.push(`| ${ra.id} | ${k(ra.serverIr)} | ${k(rb.serverIr)} | ${diff(ra.serverIr, rb.serverIr)} | ${redis} |`);
  }
  return { table: lines.join('\n'), worst };
}
