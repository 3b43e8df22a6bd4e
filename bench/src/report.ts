// docs/benchmarks-details.md from a results set: chart first, then tables, then how and where it was measured.
import { LOG_MAX_LIMIT } from './admit';
import { floodSection } from './flood-report';
import { frameworkInfo } from './frameworks';
import { GOAL_TEXT, LOAD_TEXT, best, evaluateGoals, groupsOf, headersOf, loadOf, quotaHeaders, storeOf, verdict, type GoalId } from './goals';
import { RECONCILIATION } from './reconcile';
import { ratio } from './stats';
import { DEFAULT_ALGORITHM, FRAMEWORKS, LOAD_SHAPES, type BenchResults, type LoadShape, type RoundSample, type MicroRun, type RedisCeilingRow, type Framework, type HeadersSeen, type MemoryStoreRow, type ThroughputRow } from './types';

const int = (x: number | null | undefined) => (x === null || x === undefined || !Number.isFinite(x) ? 'n/a' : Math.round(x).toLocaleString('en-US'));
const fix = (x: number | null | undefined, digits = 2) => (x === null || x === undefined || !Number.isFinite(x) ? 'n/a' : x.toFixed(digits));
const pct = (x: number) => (Number.isFinite(x) ? `${(x * 100).toFixed(x > 0 && x < 0.01 ? 2 : 0)}%` : 'n/a');

const tableLine = (cells: string[]) => `| ${cells.map((c) => c.replace(/\|/g, '\\|')).join(' | ')} |`;

function table(head: string[], rows: string[][]): string {
  return [tableLine(head), tableLine(head.map(() => '---')), ...rows.map(tableLine)].join('\n');
}

/**
 * A figure with its spread over rounds: "0.76 (0.74–0.78)" when the row kept two or more rounds,
 * else the figure alone (results from before rounds were kept).
 */
export function withSpread(figure: string, row: ThroughputRow | undefined, of: (r: RoundSample) => number | null, digits: number): string {
  const values = (row?.rounds ?? []).map(of).filter((v): v is number => v !== null && Number.isFinite(v));
  if (values.length < 2) return figure;
  return `${figure} (${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)})`;
}

/** The load shapes a run measured, in report order. */
const loadsOf = (results: BenchResults): LoadShape[] => LOAD_SHAPES.filter((load) => results.throughput.some((r) => loadOf(r) === load));

/** A load shape in words: "one subject", "10,000 callers (X-Forwarded-For)". */
export function loadName(results: BenchResults, load: LoadShape): string {
  return load === 'one' ? LOAD_TEXT.one : `${(results.meta.settings.callers ?? 10_000).toLocaleString('en-US')} callers (X-Forwarded-For)`;
}

/** µs with two decimals below 10, one above. */
const us = (x: number) => (!Number.isFinite(x) ? 'n/a' : x < 10 ? x.toFixed(2) : x.toFixed(1));

/** The micro section as a table: µs per operation per checkout, and after / before with two. */
export function microTable(run: MicroRun): string {
  const two = run.sides.length === 2;
  return table(
    ['case', ...run.sides.map((s) => `µs/op, ${s}`), ...(two ? ['after / before'] : [])],
    run.rows.map((r) => [r.name, ...r.us.map(us), ...(two ? [fix(ratio(r.us[1], r.us[0]))] : [])]),
  );
}

/** The micro run's bytes allocated per decision (`--alloc`), per checkout, and after / before with two. */
export function allocTable(run: MicroRun): string {
  const two = run.sides.length === 2;
  return table(
    ['case', ...run.sides.map((s) => `bytes allocated per decision, ${s}`), ...(two ? ['after / before'] : [])],
    run.rows.map((r) => {
      const b = r.bytes ?? run.sides.map(() => NaN);
      return [r.name, ...b.map((x) => (Number.isFinite(x) ? String(Math.round(x)) : 'n/a')), ...(two ? [fix(ratio(b[1], b[0]))] : [])];
    }),
  );
}

const KNOWN_TRIPLES = [
  ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'],
  ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'],
];

/** A header list, short: a full Limit/Remaining/Reset set as "RateLimit-Limit/-Remaining/-Reset"; "none" for an empty one. */
export function formatHeaderList(headers: readonly string[]): string {
  if (headers.length === 0) return 'none';
  const parts: string[] = [];
  const left = [...headers];
  for (const triple of KNOWN_TRIPLES) {
    if (triple.every((h) => left.includes(h))) {
      const at = left.indexOf(triple[0]);
      left.splice(at, 1, `${triple[0]}/-Remaining/-Reset`);
      for (const h of triple.slice(1)) left.splice(left.indexOf(h), 1);
    }
  }
  parts.push(...left);
  return parts.join(', ');
}

/** "admitted headers; 429: + what the 429 adds" (or its own list when it drops some), from real responses. */
export function formatHeadersSeen(seen: HeadersSeen | undefined): string {
  if (!seen) return 'n/a';
  const admitted = seen.admitted === null ? 'n/a' : formatHeaderList(seen.admitted);
  if (seen.limited === null) return admitted;
  if (seen.admitted !== null && seen.admitted.length === 0 && seen.limited.length === 0) return 'none';
  const adds = seen.admitted !== null && seen.admitted.every((h) => seen.limited!.includes(h));
  const extra = seen.limited.filter((h) => !(seen.admitted ?? []).includes(h));
  const limited = adds ? (extra.length ? `+ ${formatHeaderList(extra)}` : 'the same') : formatHeaderList(seen.limited);
  return `${admitted}; 429: ${limited}`;
}

const labelsOf = (rows: readonly ThroughputRow[]) => [...new Set(rows.map((r) => r.label))];
const name = (rows: readonly ThroughputRow[], label: string) =>
  `${label}${rows.find((r) => r.label === label)?.wiring === 'inline-core' ? ' (core inline: adapter not built)' : ''}`;

/** The contenders of one framework: the memory group, the Redis group, bare route and floors, then cost per request. */
function throughputTables(results: BenchResults, framework: Framework, load: LoadShape = 'one'): { title: string; table: string }[] | undefined {
  const g = groupsOf(results, framework, load);
  if (g.rows.length === 0) return undefined;
  const pick = (label: string, regime: 'admit' | 'reject') => g.rows.find((r) => r.label === label && r.regime === regime);
  const speed = (r: ThroughputRow | undefined) => (r ? [int(r.medianRps), withSpread(`**${fix(r.ratio)}**`, r, (x) => x.ratio, 2), fix(r.cpuRatio)] : ['n/a', 'n/a', 'n/a']);
  const out: { title: string; table: string }[] = [];
  if (g.memory.length) {
    out.push({
      title: 'in memory',
      table: table(
        ['contender', 'headers sent', 'admitting req/s', '× bare route', 'by CPU', 'rejecting req/s', '× bare route', 'by CPU'],
        labelsOf(g.memory).map((label) => [name(g.rows, label), formatHeadersSeen(headersOf(g.rows, label)), ...speed(pick(label, 'admit')), ...speed(pick(label, 'reject'))]),
      ),
    });
  }
  if (g.redis.length) {
    out.push({
      title: 'on Redis',
      table: table(
        ['contender', 'headers sent', 'admitting req/s', '× bare route', '× floor (PING per turn)', 'by CPU', 'rejecting req/s', '× bare route', 'by CPU'],
        labelsOf(g.redis).map((label) => {
          const a = pick(label, 'admit');
          const [rps, bare, cpu] = speed(a);
          return [name(g.rows, label), formatHeadersSeen(headersOf(g.rows, label)), rps, bare, fix(a?.floorRatio ?? NaN), cpu, ...speed(pick(label, 'reject'))];
        }),
      ),
    });
  }
  const base = [...(g.ceiling ? [g.ceiling] : []), ...g.floors];
  if (base.length) {
    out.push({
      title: 'bare route and floors',
      table: table(
        ['route', 'req/s', '× bare route', 'by CPU', 'runs'],
        base.map((r) => [r.label, int(r.medianRps), r.group === 'ceiling' ? '1.00' : `**${fix(r.ratio)}**`, fix(r.cpuRatio), String(r.samples.length)]),
      ),
    });
  }
  const pair = (a: ThroughputRow | undefined, b: ThroughputRow | undefined, get: (r: ThroughputRow) => number | null, digits: number) =>
    `${a ? fix(get(a), digits) : 'n/a'} / ${b ? fix(get(b), digits) : 'n/a'}`;
  const cost = labelsOf([...g.memory, ...g.redis, ...g.floors]).map((label) => {
    const a = pick(label, 'admit');
    const b = pick(label, 'reject');
    return [
      name(g.rows, label),
      withSpread(pair(a, b, (r) => r.serverCpuUsPerRequest, 0), a, (x) => x.serverCpuUs, 0),
      pair(a, b, (r) => r.redisCallsPerRequest, 1),
      withSpread(pair(a, b, (r) => r.redisCpuUsPerRequest, 1), a?.store === 'redis' ? a : undefined, (x) => x.redisCpuUs, 1),
      pair(a, b, (r) => r.latencyP99Ms, 1),
      `${a ? pct(a.okShare) : 'n/a'} / ${b ? pct(b.limitedShare) : 'n/a'}`,
    ];
  });
  if (g.ceiling) {
    const c = g.ceiling;
    cost.unshift([c.label, withSpread(fix(c.serverCpuUsPerRequest, 0), c, (x) => x.serverCpuUs, 0), '0', '0', fix(c.latencyP99Ms, 1), `${pct(c.okShare)} 2xx`]);
  }
  out.push({
    title: 'cost per request',
    table: table(
      [
        'contender',
        'server CPU µs per request (admit / reject)',
        'Redis commands per request',
        'Redis CPU µs per request',
        'p99 latency ms',
        '2xx when admitting / 429 when rejecting',
      ],
      cost,
    ),
  });
  return out;
}

/** The markers around one framework's throughput section in one load shape, so that a later run of that framework alone can replace it. */
export const frameworkMarkers = (framework: Framework, load: LoadShape = 'one') =>
  [`<!-- bench:framework ${framework} ${load} -->`, `<!-- /bench:framework ${framework} ${load} -->`] as const;

const headingOf = (results: BenchResults, framework: Framework, load: LoadShape) => (load === 'one' ? framework : `${framework}, ${loadName(results, load)}`);

/** The anchor GitHub gives a heading: lower case, punctuation but hyphens dropped, spaces as hyphens. */
const anchorOf = (heading: string) => heading.toLowerCase().replace(/[^\p{L}\p{N}\s-]/gu, '').replace(/\s/g, '-');

/**
 * One framework's throughput section in one load shape, between its markers: its heading and
 * tables. With `separate` (a run of some frameworks only, spliced into a page another run wrote),
 * it also says which run measured it and gives that run's goal verdicts and notes for it, since
 * the page's header, Goals table and chart describe the other run.
 */
export function frameworkSection(results: BenchResults, framework: Framework, load: LoadShape = 'one', separate?: { command: string }): string | undefined {
  const tables = throughputTables(results, framework, load);
  if (!tables) return undefined;
  const [start, end] = frameworkMarkers(framework, load);
  const heading = headingOf(results, framework, load);
  const out = [start, `### ${heading}`];
  if (separate) {
    const { meta } = results;
    const info = frameworkInfo(framework);
    out.push('');
    out.push(
      `${info.title}. Measured ${meta.date.slice(0, 10)} by \`${separate.command}\` (a ${meta.mode} run of ${Math.round(meta.durationS)} s, ` +
        `${meta.settings.rounds} round(s) of ${meta.settings.secondsPerRun} s${meta.pinning ? `, ${meta.pinning.how}` : ''}, load average ${meta.loadAverageStart.join(', ')} at start and ${meta.loadAverageEnd.join(', ')} at the end): ` +
        "a run of its own, not the run in this page's header, so compare its ratios (each to this framework's own bare route, in the same rounds) with the other frameworks', not its req/s. " +
        `Not in the chart above. Versions: ${[info.adapter, ...info.packages, ...info.peerPackages].map((p) => `${p} ${meta.versions[p] ?? '?'}`).join(', ')}.`,
    );
    // Its Summary row here too: the page's Summary table takes it only when it has the same columns.
    const own = summaryRows(results).find((r) => r.framework === framework && r.load === load);
    if (own) {
      out.push('');
      out.push(table(SUMMARY_HEAD, [own.cells]));
    }
    const checks = evaluateGoals(results).filter((c) => c.framework === framework && c.load === load);
    if (checks.length) {
      out.push('');
      out.push(table(['goal (see Goals above)', heading], checks.map((c) => [`(${c.goal}) ${c.regime === 'admit' ? 'admitting' : 'rejecting'}`, `${verdict(c)}: ${c.subject}`])));
    }
    for (const note of warnings({ ...results, throughput: results.throughput.filter((r) => r.framework === framework && loadOf(r) === load) })) {
      out.push('');
      out.push(`> ${note}`);
    }
  }
  for (const t of tables) {
    out.push('');
    out.push(`#### ${heading}, ${t.title}`);
    out.push('');
    out.push(t.table);
  }
  out.push(end);
  return out.join('\n');
}

/**
 * The page with the frameworks of `results` (a run of those frameworks' throughput only) put in:
 * each one's section per load shape replaced between its markers, or added after the last
 * framework's section; and its Summary rows replaced or added. Everything else stays as the run
 * that wrote the page measured it.
 */
export function spliceFrameworks(page: string, results: BenchResults, command: string): string {
  let out = page;
  for (const load of loadsOf(results)) {
    for (const framework of FRAMEWORKS) {
      const section = frameworkSection(results, framework, load, { command });
      if (!section) continue;
      const [start, end] = frameworkMarkers(framework, load);
      const from = out.indexOf(start);
      const to = out.indexOf(end);
      if (from >= 0 && to > from) {
        out = `${out.slice(0, from)}${section}${out.slice(to + end.length)}`;
        continue;
      }
      // After the Throughput section's last table: just before the next "## " heading.
      const throughput = out.indexOf('\n## Throughput\n');
      if (throughput < 0) throw new Error('docs/benchmarks-details.md has no "## Throughput" section to add a framework to: run the full bench first');
      const next = out.indexOf('\n## ', throughput + 1);
      const at = next < 0 ? out.length : next + 1;
      out = `${out.slice(0, at).replace(/\n*$/, '\n\n')}${section}\n\n${out.slice(at)}`;
    }
  }
  for (const { framework, load, cells } of summaryRows(results)) {
    const [, loadCell, ...rest] = cells;
    const line = tableLine([`${framework} (a run of its own: [below](#${anchorOf(headingOf(results, framework, load))}))`, loadCell, ...rest]);
    const lines = out.split('\n');
    const heading = lines.indexOf('## Summary');
    if (heading < 0) continue;
    const first = lines.findIndex((l, i) => i > heading && l.startsWith('| '));
    // A page from an older run has other columns: the row then stays in the framework's section only.
    if (first < 0 || lines[first] !== tableLine(SUMMARY_HEAD)) continue;
    let last = first;
    while (lines[last + 1]?.startsWith('| ')) last++;
    const ours = (l: string) => (l.startsWith(`| ${framework} |`) || l.startsWith(`| ${framework} (`)) && l.split(' | ')[1] === tableLine([loadCell]).slice(2, -2);
    const row = lines.findIndex((l, i) => i >= first && i <= last && ours(l));
    if (row >= 0) lines[row] = line;
    else lines.splice(last + 1, 0, line);
    out = lines.join('\n');
  }
  return out;
}

/**
 * A MemoryStore figure, never an impossible one: "395 ± 12", or "below measurement noise (± 40)"
 * when the median is not above its noise bound (or is negative, as in results from before the
 * bound was measured).
 */
export function memoryCell(row: MemoryStoreRow | undefined): string {
  if (!row || !Number.isFinite(row.bytesPerCaller)) return 'n/a';
  const noise = Math.ceil(row.noiseBytes ?? 0);
  if (row.bytesPerCaller <= 0 || row.bytesPerCaller <= noise) return noise > 0 ? `below measurement noise (± ${int(noise)})` : 'below measurement noise';
  return noise > 0 ? `${int(row.bytesPerCaller)} ± ${int(noise)}` : int(row.bytesPerCaller);
}

/** "0.93 / 0.99": a contender's admitting and rejecting × bare route. */
function bothRatios(rows: readonly ThroughputRow[], label: string | undefined): string {
  if (!label) return 'n/a';
  const a = rows.find((r) => r.label === label && r.regime === 'admit');
  const b = rows.find((r) => r.label === label && r.regime === 'reject');
  return `${a ? fix(a.ratio) : 'n/a'} / ${b ? fix(b.ratio) : 'n/a'}`;
}

/** Server CPU per request over the bare route's, µs, with a sign: "+20.1". */
function added(row: ThroughputRow | undefined, bare: ThroughputRow | undefined): string {
  const x = (row?.serverCpuUsPerRequest ?? NaN) - (bare?.serverCpuUsPerRequest ?? NaN);
  return Number.isFinite(x) ? `${x >= 0 ? '+' : ''}${x.toFixed(1)}` : 'n/a';
}

/** The summary's rows, one per framework and load shape measured. */
function summaryRows(results: BenchResults): { framework: Framework; load: LoadShape; cells: string[] }[] {
  const rows: { framework: Framework; load: LoadShape; cells: string[] }[] = [];
  for (const load of loadsOf(results)) {
    for (const framework of FRAMEWORKS) {
      const g = groupsOf(results, framework, load);
      if (g.rows.length === 0) continue;
      const fgMem = g.floodgateMemory('admit') ?? g.floodgateMemory('reject');
      const peers = g.memoryPeers('admit');
      const withHeaders = best(peers.filter((p) => quotaHeaders(headersOf(g.rows, p.label)).length > 0));
      const overall = best(peers);
      const memPeer = peers.length
        ? [
            withHeaders ? `${withHeaders.label} ${bothRatios(g.rows, withHeaders.label)}` : 'none sends rate-limit headers',
            overall && overall !== withHeaders ? `best overall: ${overall.label} ${bothRatios(g.rows, overall.label)} (no rate-limit headers)` : withHeaders ? 'also best overall' : '',
          ]
            .filter(Boolean)
            .join('; ')
        : 'n/a';
      const fgRedis = g.floodgateRedis('admit') ?? g.floodgateRedis('reject');
      const fgRedisAdmit = g.floodgateRedis('admit');
      const spread = withSpread('', fgRedisAdmit, (x) => x.ratio, 2).trim();
      const redisCell = fgRedis
        ? `${bothRatios(g.rows, fgRedis.label)} (${/\(([^)]+)\)/.exec(fgRedis.label)?.[1] ?? ''}; ${fix(fgRedisAdmit?.floorRatio ?? NaN)} of the floor${spread ? `; admitting by round ${spread.slice(1, -1)}` : ''})`
        : 'n/a';
      const redisPeer = best(g.redisPeers('admit'));
      rows.push({ framework, load, cells: [
        framework,
        loadName(results, load),
        fgMem ? `${bothRatios(g.rows, fgMem.label)}` : 'n/a',
        memPeer,
        redisCell,
        redisPeer ? `${redisPeer.label} ${bothRatios(g.rows, redisPeer.label)}` : 'n/a',
        g.floorTurn ? fix(g.floorTurn.ratio) : 'n/a',
        `${added(fgRedisAdmit, g.ceiling)} / ${added(redisPeer, g.ceiling)} / ${added(g.floorTurn, g.ceiling)}`,
        `${fix(fgRedisAdmit?.redisCpuUsPerRequest ?? NaN, 1)} / ${fix(redisPeer?.redisCpuUsPerRequest ?? NaN, 1)} / ${fix(g.floorTurn?.redisCpuUsPerRequest ?? NaN, 1)}`,
      ] });
    }
  }
  return rows;
}

/** The summary at the top: one row per framework and load shape, from the run. */
export function summaryTable(results: BenchResults): string | undefined {
  const rows = summaryRows(results).map((r) => r.cells);
  if (rows.length === 0) return undefined;
  return table(SUMMARY_HEAD, rows);
}

const SUMMARY_HEAD = [
  'framework',
  'load',
  'Floodgate in memory',
  'best in-memory peer (that sends rate-limit headers, and best overall)',
  'Floodgate on Redis',
  'best Redis peer',
  'floor: one PING per turn',
  'server CPU µs added per admitted request: Floodgate on Redis / best Redis peer / floor',
  'Redis CPU µs per admitted request: Floodgate / best Redis peer / floor',
];

/** The goals as a table: one line per goal, regime and load shape, one column per framework measured. */
export function goalsTable(results: BenchResults): string | undefined {
  const checks = evaluateGoals(results);
  if (checks.length === 0) return undefined;
  const frameworks = FRAMEWORKS.filter((f) => checks.some((c) => c.framework === f));
  const keyOf = (c: (typeof checks)[number]) => `${c.load}\u0000${c.goal}\u0000${c.regime}\u0000${c.goal === 'f' ? (c.id.includes('-memory') ? 'memory' : 'Redis') : ''}`;
  const keys = [...new Set(checks.map(keyOf))];
  const rows = keys.map((key) => {
    const [load, goal, regime, where] = key.split('\u0000');
    const of = checks.filter((c) => keyOf(c) === key);
    const label = goal === 'e' ? `${GOAL_TEXT.e} (${regime === 'admit' ? 'admitting' : 'rejecting'})` : goal === 'f' ? `${GOAL_TEXT.f}: ${where}` : GOAL_TEXT[goal as GoalId];
    return [
      `(${goal}) ${label}`,
      loadName(results, load as LoadShape),
      ...frameworks.map((f) => {
        const c = of.find((x) => x.framework === f);
        return c ? `${verdict(c)}: ${c.subject}` : 'n/a';
      }),
    ];
  });
  return table(['goal', 'load', ...frameworks], rows);
}

/**
 * The core's share of the ceiling, only when every core decision was Redis's own admission: a call
 * answered from the block cache never reaches Redis and would make an impossible ratio. Runs from
 * before the share was recorded ran sliding-window-log's core on one subject, capped at 10,000 per
 * second: most of its calls were local denials.
 */
export function ceilingRatio(r: RedisCeilingRow): string {
  const share = r.coreAdmittedShare ?? (r.algorithm === 'sliding-window-log' ? 0 : 1);
  if (share >= 0.99) return `**${fix(r.ratio)}**`;
  return r.coreAdmittedShare === undefined
    ? 'n/a: capped at 10,000/s on one subject, most calls denied locally (not recorded in this run)'
    : `n/a: only ${Math.round(share * 100)}% of the core's calls were admitted by Redis`;
}

export function renderMarkdown(results: BenchResults, svgFile = 'benchmarks.svg'): string {
  const { meta } = results;
  const out: string[] = [];
  out.push('# Benchmarks');
  out.push('');
  out.push(
    `Measured ${meta.date.slice(0, 10)} by \`${meta.command ?? `pnpm bench${meta.mode === 'quick' ? ' --quick' : ''}`}\` (a ${meta.mode} run, ${Math.round(meta.durationS)} s) on ${meta.cpu}, ` +
      `${meta.cores} cores, ${meta.memoryGiB} GiB; Node ${meta.node}, Redis ${meta.redis}. Every contender ran in the same run, on the same machine, against the same redis-server; ` +
      'throughput is reported as a share of the same framework with no limiter, measured in the same rounds.',
  );
  if (meta.notes.length) {
    out.push('');
    for (const note of meta.notes) out.push(`> ${note}`);
  }
  out.push('');
  const summary = summaryTable(results);
  if (summary) {
    out.push('## Summary');
    out.push('');
    out.push(
      'Throughput kept, as a share of the same framework\'s bare route (no limiter), **admitting / rejecting**: medians over rounds of ratios paired by round. ' +
        `"Floodgate on Redis" is ${DEFAULT_ALGORITHM} (the default algorithm) when the run measured it, with its admitting share of the floor of one Redis PING per event-loop turn; ` +
        'peers are ranked by their admitting share. "Rate-limit headers": RateLimit-* or X-RateLimit-* on an admitted response, as each server sent them in this run ' +
        '(see the "headers sent" columns below). Details, and the same for every algorithm and contender, under [Throughput](#throughput).',
    );
    out.push('');
    out.push(summary);
    out.push('');
  }
  const goals = goalsTable(results);
  if (goals) {
    out.push('## Goals');
    out.push('');
    out.push(
      "Issue #32's goals, each checked against this run for each load shape: the figure, ✓ met or ✗ missed and by how much (in the goal's unit, and as a share of the target). " +
        `Ratios are medians over rounds of ratios paired by round. "Floodgate in memory" is the memory store without an OpenTelemetry SDK; "Floodgate on Redis" is ${DEFAULT_ALGORITHM} when measured. ` +
        "Goal (a) divides Floodgate's share of the bare route by the best Redis peer's; (c) is the server's CPU per admitted response (process and children, from /proc) less the bare route's, " +
        "against the same for the floor of one PING per turn plus 3 µs; (d) is redis-server's own CPU time (INFO cpu) per admitted response.",
    );
    out.push('');
    out.push(goals);
    out.push('');
  }
  out.push(`![Throughput kept by each limiter, race and accuracy results](${svgFile})`);
  out.push('');

  if (results.throughput.length) {
    out.push('## Throughput');
    out.push('');
    out.push(
      `${meta.settings.connections} connections, every limiter on the same Redis, in ${loadsOf(results).length > 1 ? 'two load shapes' : 'one load shape'}: ` +
        `one subject (every request from 127.0.0.1)${loadsOf(results).includes('callers') ? `, and ${loadName(results, 'callers')}: each request carries the next of that many addresses (198.18.0.0/15) in X-Forwarded-For, every server trusting the loopback proxy (Express 'trust proxy' 'loopback', Fastify trustProxy '127.0.0.1', Koa proxy with maxIpsCount 1), so every contender keys on the address its framework reports` : ''}. ` +
        `${meta.pinning ? `Processes: ${meta.pinning.how}. ` : ''}` +
        `${meta.settings.rounds} round(s) of ${meta.settings.secondsPerRun} s per contender (the bare route and the per-turn floor twice per round) after ${meta.settings.warmupSeconds} s of warm-up, the order rotated each round; ` +
        'medians over rounds; "× bare route" is paired by round: the median over rounds of the contender\'s req/s divided by the bare route\'s in the same round, so slow drift in the machine\'s load cancels. ' +
        '"× floor (PING per turn)" is the same against the floor of one Redis PING per event-loop turn, for admitting contenders on Redis. Admitting: limit 1,000,000,000 per hour. Rejecting: limit 1 per hour. ' +
        'Each server is its own Node process; autocannon runs in the bench process. "headers sent" is read from each server\'s own responses right after it started (its first admitted response and, with limit 1, its first 429), not from documentation; ' +
        '"none" means no rate-limit header at all. "Redis commands per request" is the INFO commandstats delta over the measured runs divided by responses ' +
        "(Redis counts the commands a script runs, so one EVALSHA of a script that runs four commands counts five); \"Redis CPU\" is redis-server's own CPU time (INFO cpu) per response; server CPU is the server process's user + system time with its children's, read from /proc/<pid>/stat by the bench. " +
        'A figure in bold with a range after it: the median and, in brackets, the lowest and highest round (the spread). ' +
        "0 when rejecting means the 429 was answered without Redis (Floodgate's block cache). " +
        '"by CPU" is the bare route\'s server CPU time per request divided by the contender\'s (each server\'s own user + system time over the measured runs): ' +
        'the ratio a CPU-bound server shows, and steadier than req/s when other processes share the machine. ' +
        'The two "floor" rows limit nothing: one sends a Redis PING per request, the other one PING per event-loop turn for all of that turn\'s requests (how Floodgate batches its script calls). ' +
        'They are the most any limiter that asks Redis, or one that batches as Floodgate does, can keep on this machine: the round trip alone costs that much.',
    );
    for (const load of loadsOf(results)) {
      for (const framework of FRAMEWORKS) {
        const section = frameworkSection(results, framework, load);
        if (!section) continue;
        out.push('');
        out.push(section);
      }
    }
    out.push('');
  }

  if (results.redisCeiling.length) {
    out.push('## The Redis ceiling');
    out.push('');
    out.push(
      "How many decisions per second one Redis gives on one subject: `redis-benchmark` sending Floodgate's own script as EVALSHA (with the arguments RedisStore sends), " +
        'once from as many connections as calls in flight and once pipelined on one connection (as one Node process does); a raw ioredis EVALSHA loop from Node; ' +
        'and Floodgate core (`createLimiter` + `RedisStore`, `consume()`), each with the same number of calls in flight. The ratio is core over the highest of the other three: the most this Redis was seen to do on one subject. ' +
        '(A single connection with calls in flight back to back, as ioredis keeps them, can beat redis-benchmark: Redis then reads and answers several commands per system call.)',
    );
    out.push('');
    out.push(
      table(
        ['algorithm', 'in flight', 'redis-benchmark EVALSHA/s', 'pipelined, 1 connection', 'ioredis EVALSHA/s', 'Floodgate core decisions/s', 'core / best of the others'],
        results.redisCeiling.map((r) => [
          r.algorithm,
          String(r.connections),
          int(r.redisBenchmarkRps),
          int(r.redisBenchmarkPipelinedRps),
          int(r.ioredisRps),
          int(r.coreRps),
          ceilingRatio(r),
        ]),
      ),
    );
    out.push('');
  }

  if (results.race.length) {
    const r0 = results.race[0];
    out.push('## Races');
    out.push('');
    out.push(
      `${r0.processes} server processes share one Redis and one subject (limit ${r0.limit} per 10 minutes); ${r0.attemptsPerRepetition} requests arrive at once, ` +
        'spread over the processes. Admitted / limit should be 1.00; above it, the limiter let a race through. A fresh subject per repetition.',
    );
    out.push('');
    out.push(
      table(
        ['contender', 'admitted per repetition', 'admitted / limit (median)', '(worst)'],
        results.race.map((r) => [r.label, r.admitted.join(', '), `**${fix(r.medianRatio)}**`, fix(r.maxRatio)]),
      ),
    );
    out.push('');
  }

  if (results.micro && results.micro.rows.length) {
    const m = results.micro;
    out.push('## Per-request work in a tight loop (micro)');
    out.push('');
    out.push(
      `The same steps as a server's, without the network: each case run ${m.job.ops.toLocaleString('en-US')} times in a row (each awaited when it returns a promise), the median of ${m.job.samples} samples per round, the median of ${m.rounds} round(s)${m.sides.length === 2 ? ', the two checkouts alternating' : ''}; compiled as a release build (\`bench/src/micro-worker.ts\`, run alone by \`pnpm bench:micro\`, which takes \`--against DIR\` to compare with another checkout). Admitting: limit 1,000,000,000 per hour on the memory store (sliding-window-counter, the default). The adapters' cases call the middleware or hook with stand-in request and response objects: what Floodgate adds to a request, not what the framework costs; the two Fastify 'whole request' cases run Fastify itself (\`app.routing\`, every hook it composed for the route) on Node's request and response objects over a socket that discards what it is sent, without and with the plugin.`,
    );
    out.push('');
    out.push(microTable(m));
    out.push('');
    if (m.rows.some((r) => r.bytes !== undefined)) {
      out.push('Bytes allocated per decision (`--alloc`: V8\'s sampling heap profiler over a pass of its own, collected objects included):');
      out.push('');
      out.push(allocTable(m));
      out.push('');
    }
  }

  if (results.accuracy.length) {
    const a0 = results.accuracy[0];
    const patterns = a0.patterns.map((p) => p.pattern);
    out.push('## Accuracy');
    out.push('');
    out.push(
      `The most requests each algorithm admits in any ${a0.windowMs / 1000} s span, as a multiple of the limit (${a0.limit}), counted from the exact log of admission times. ` +
        'Simulated on MemoryStore with an injected clock (the Lua scripts decide identically: core checks both against one conformance suite). ' +
        'token-bucket and gcra are configured as burst = limit, refilling the limit per window, so a full burst plus a window of refill is their designed maximum.',
    );
    out.push('');
    out.push(
      table(
        ['algorithm', ...patterns, 'worst'],
        results.accuracy.map((a) => [a.algorithm, ...a.patterns.map((p) => fix(p.ratio)), `**${fix(a.worstRatio)}**`]),
      ),
    );
    out.push('');
    out.push('- boundary-burst: 2× limit attempts in the last ms of a fixed window, 2× limit in the first ms of the next.');
    out.push(
      "- late-burst-pair: 2× limit attempts at the end of one window and again 2 ms before the end of the next (W − 1 ms apart). sliding-window-counter's interpolation assumes the first burst was spread evenly over its window and counts almost none of it; this is its worst case.",
    );
    out.push('- steady-flood: an attempt every window / (4 × limit) for four windows.');
    out.push('');
  }

  if (results.redisMemory.length || results.memoryStore.length) {
    out.push('## Memory per caller');
    out.push('');
    if (results.redisMemory.length) {
      const limits = [...new Set(results.redisMemory.map((r) => r.limit))].sort((a, b) => a - b);
      const libs = [...new Set(results.redisMemory.map((r) => `${r.library}\u0000${r.algorithm}`))];
      out.push('Redis `MEMORY USAGE` (exact, `SAMPLES 0`) of one subject drawn to its limit, summed over its keys, per minute-long window.');
      out.push('');
      out.push(
        table(
          ['library', 'algorithm', ...limits.map((l) => `bytes at ${l.toLocaleString('en-US')}/min`), 'keys'],
          libs.map((key) => {
            const [library, algorithm] = key.split('\u0000');
            const cells = limits.map((l) => int(results.redisMemory.find((r) => r.library === library && r.algorithm === algorithm && r.limit === l)?.bytes));
            const keys = results.redisMemory.find((r) => r.library === library && r.algorithm === algorithm)?.keys ?? 0;
            return [library, algorithm, ...cells, String(keys)];
          }),
        ),
      );
      out.push('');
    }
    if (results.memoryStore.length) {
      const algorithms = [...new Set(results.memoryStore.map((r) => r.algorithm))];
      const one = (a: string) => results.memoryStore.find((r) => r.algorithm === a && r.unitsPerCaller === 1);
      const filled = (a: string) => results.memoryStore.find((r) => r.algorithm === a && r.unitsPerCaller > 1);
      const f0 = results.memoryStore.find((r) => r.unitsPerCaller > 1);
      const o0 = results.memoryStore.find((r) => r.unitsPerCaller === 1);
      out.push(
        `MemoryStore: V8 heap per caller (node --expose-gc), over ${int(o0?.callers)} callers with one request each` +
          (f0 ? ` and ${int(f0.callers)} callers filled to ${f0.unitsPerCaller}` : '') +
          ': the heap a filled store frees when it is dropped, less what an unused store of the same size frees, per caller (heap read after full GCs; nothing runs between the two readings). ' +
          `Median of ${o0?.samples?.length ?? 1} sample(s) ± the noise bound (half the samples' spread plus the heap readings' own jitter); a figure not above its noise is not resolved and says so. ` +
          "Includes the key string, the LRU entry and the algorithm state; not core's process-wide memo of recent callers' keys (at most 20,000 keys, whatever the number of callers)." +
          (results.memoryStoreEmptyBytes !== null ? ` An empty MemoryStore with default options holds ${int(results.memoryStoreEmptyBytes)} bytes.` : '') +
          (typeof results.limiterBytes === 'number' ? ` A limiter itself, before its first caller, on a store made elsewhere (as a route's limiter shares its app's store), holds ${int(results.limiterBytes)} bytes.` : ''),
      );
      out.push('');
      out.push(
        table(
          ['algorithm', 'bytes per caller (1 request)', `bytes per caller (filled to ${f0?.unitsPerCaller ?? 'limit'})`],
          algorithms.map((a) => [a, memoryCell(one(a)), memoryCell(filled(a))]),
        ),
      );
      out.push('');
    }
  }

  if (results.profiles.length) {
    out.push('## Profiles');
    out.push('');
    out.push(
      'CPU profiles (`node --cpu-prof` on the server process, warm-up cut out) of Floodgate contenders that missed a goal, with the no-limiter server beside them. ' +
        'Self time as a share of all samples; "(native)" is time in C++ (mostly socket writes: writev for HTTP responses, writeUtf8String for Redis commands).',
    );
    for (const p of results.profiles) {
      out.push('');
      out.push(`### ${p.label} (${int(p.rps)} req/s while profiled${p.cpuUsPerRequest ? `, ${int(p.cpuUsPerRequest)} µs of server CPU per request` : ''})`);
      out.push('');
      out.push(`By area: ${p.byArea.slice(0, 8).map((a) => `${a.area} ${fix(a.selfPercent, 1)}%`).join(', ')}.`);
      out.push('');
      out.push(
        table(
          ['self %', 'function', 'where'],
          p.top.slice(0, 10).map((f) => [fix(f.selfPercent, 1), `\`${f.functionName}\``, f.url ? `${f.url}:${f.line}` : '']),
        ),
      );
    }
    out.push('');
  }

  const flood = floodSection(results.flood ?? []);
  if (flood) {
    out.push(flood);
    out.push('');
  }

  if (results.throughput.length) {
    out.push(RECONCILIATION.trimEnd());
    out.push('');
  }
  out.push('## How this was measured');
  out.push('');
  out.push(
    table(
      ['', ''],
      [
        ['date', meta.date],
        ['mode', `${meta.mode} (${Math.round(meta.durationS)} s)`],
        ['machine', `${meta.cpu}, ${meta.cores} cores, ${meta.memoryGiB} GiB, ${meta.os}`],
        ['load average (1, 5, 15 min) at start / end', `${meta.loadAverageStart.join(', ')} / ${meta.loadAverageEnd.join(', ')}`],
        ['Node / Redis', `${meta.node} / ${meta.redis}`],
        ['hot-key mode in core', meta.hotKeys ? 'yes (measured on its own line)' : 'not yet (not measured)'],
        ['settings', Object.entries(meta.settings).map(([k, v]) => `${k} ${v}`).join(', ')],
        ['processes on cores', meta.pinning?.how ?? 'not pinned (not recorded)'],
        ...Object.entries(meta.versions).map(([name, version]) => [name, version]),
      ],
    ),
  );
  out.push('');
  out.push(
    'Floodgate runs as a release build would: the bench compiles each @floodgate package with esbuild (no keepNames) before it starts, while frameworks and peers run as installed from npm. ' +
      'Every Redis client is ioredis with `maxRetriesPerRequest: 1` and `autoResendUnfulfilledCommands: false` (as Floodgate\'s docs ask; it changes nothing for the peers); ' +
      "Floodgate's RedisStore gets a 1 s `timeoutMs` so that a slow moment on a busy machine does not turn into failure-mode decisions, and a run in which Floodgate still logs a store failure says so above. " +
      "Everything else in Floodgate is at its defaults: `coalesce: 'turn'` (one script call per event-loop turn for every subject of the turn (per slot on a Cluster), each request still decided exactly and on its own; the Redis commands column shows the calls it saved) and `respondDirectly: true` (its own 429 written straight to Node). " +
      'Peers use their documented setup and default options (headers included): in memory their default store (express-rate-limit\'s MemoryStore, rate-limiter-flexible\'s RateLimiterMemory, @fastify/rate-limit\'s in-process LRU, koa-ratelimit\'s memory driver with one `new Map()` as its README shows), on Redis their Redis store; rate-limiter-flexible runs in the Express middleware from its wiki. ' +
      `Floodgate's memory, OpenTelemetry and hot-key lines use ${DEFAULT_ALGORITHM}, the default algorithm, unless the run measured other algorithms only (then the first of those). ` +
      'Hot-key mode is configured with `{ instances: 4 }` for throughput and with the number of processes for races.',
  );
  out.push('');
  out.push(
    'Run it: `pnpm bench` (full, about an hour) or `pnpm bench --quick` (a few minutes); `pnpm bench --help` lists the options. ' +
      'It starts its own redis-server on a free loopback port, needs `redis-server` and `redis-benchmark` on the PATH, and writes this page, the chart and `bench/results/<date>.json`. ' +
      'Numbers from a busy machine are noisy: compare ratios from one run, not req/s across runs.',
  );
  out.push('');
  return out.join('\n');
}

/** What the reader must know before trusting the numbers: noise, missing adapters, misbehaving contenders. */
export function warnings(results: BenchResults): string[] {
  const notes: string[] = [];
  if (results.meta.mode === 'quick') {
    notes.push('Quick run: one short round per contender. Good for checking the harness; quote only full runs.');
  }
  const load = results.meta.loadAverageStart[0];
  if (load !== undefined && load > 0.5) {
    notes.push(
      `The machine was not idle (1-minute load average ${load} at start, ${results.meta.loadAverageEnd[0]} at the end, on ${results.meta.cores} cores): ` +
        'other processes competed for the CPU, so ratios are rough.',
    );
  }
  const inline = [...new Set(results.throughput.filter((r) => r.wiring === 'inline-core').map((r) => r.framework))];
  if (inline.length) {
    notes.push(
      `No Floodgate adapter for ${inline.join(', ')} existed at run time: those Floodgate rows use core in a few lines of middleware (no adapter overhead, same headers).`,
    );
  }
  const faster = results.throughput.filter((r) => r.group !== 'ceiling' && r.ratio > 1.05);
  if (faster.length) {
    notes.push(
      `${faster.map((r) => r.id).join(', ')} beat their no-limiter ceiling on req/s, which a limiter cannot really do: the machine's load moved between runs. ` +
        'The "by CPU" ratios are the steadier reading of this run.',
    );
  }
  for (const r of results.throughput) {
    if (r.errors > 0) notes.push(`${r.id}: ${r.errors} connection errors or timeouts.`);
    if (r.headers && r.headers.admitted === null) notes.push(`${r.id}: no admitted response when its headers were read, so its "headers sent" is incomplete.`);
    if (r.headers && r.regime === 'reject' && r.headers.limited === null) notes.push(`${r.id}: no 429 when its headers were read, so its "headers sent" has no 429 part.`);
    if (r.storeTrouble) notes.push(`${r.id}: Floodgate reported store trouble during the run, so some decisions were the failure mode's: ${r.storeTrouble}`);
    if (r.regime === 'admit' && r.okShare < 0.99) {
      // The log's admit regime is capped (admitLimits): past LOG_MAX_LIMIT per second its 429s are the limit working, not a fault.
      notes.push(
        r.id.includes('sliding-window-log')
          ? `${r.id}: ${(r.okShare * 100).toFixed(1)}% 2xx: its admit regime is capped at ${LOG_MAX_LIMIT.toLocaleString('en-US')} per second on one caller (sliding-window-log's largest limit), so requests past that rate are 429s by design.`
          : `${r.id}: only ${(r.okShare * 100).toFixed(1)}% 2xx while it should admit everything.`,
      );
    }
    if (r.regime === 'reject' && r.limitedShare < 0.9) notes.push(`${r.id}: only ${(r.limitedShare * 100).toFixed(1)}% 429 while it should reject nearly everything.`);
    // Hot-key mode answers most requests from a lease, so few Redis calls is its point: not checked.
    const onRedis = (r.group === 'peer' || r.group === 'floodgate') && storeOf(r) === 'redis';
    if (onRedis && r.regime === 'admit' && (r.redisCallsPerRequest ?? 0) < 0.5) {
      notes.push(`${r.id}: ${r.redisCallsPerRequest?.toFixed(2)} Redis commands per admitted request; it may not be using Redis.`);
    }
  }
  return notes;
}
