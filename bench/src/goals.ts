// Issue #32's goals, checked against a results set for each load shape: which contenders they compare and whether each is met, and by how much not.
import { DEFAULT_ALGORITHM, FRAMEWORKS, LOAD_SHAPES, type BenchResults, type Framework, type HeadersSeen, type LoadShape, type Regime, type StoreKind, type ThroughputRow } from './types';

/** The targets. Ratios are medians over rounds of paired ratios (see stats.ts pairedRatio). */
export const GOALS = {
  /** (a) Floodgate on Redis, admitting, × the best Redis peer (both as × bare route). */
  redisPeers: 1.15,
  /** (b) Floodgate on Redis, admitting, × the per-turn PING floor. */
  redisFloor: 0.9,
  /** (c) Server CPU per admitted request added over the bare route: at most the per-turn floor's added CPU plus this, µs. */
  addedCpuUs: 3,
  /** (d) redis-server CPU per admitted decision, µs. */
  redisCpuUs: 8,
  /** (f) Floodgate rejecting, memory and Redis, × bare route. */
  reject: 0.95,
} as const;

export type GoalId = 'a' | 'b' | 'c' | 'd' | 'e' | 'f';

export const GOAL_TEXT: Record<GoalId, string> = {
  a: `on Redis, admitting: at least ${GOALS.redisPeers.toFixed(2)}× the best Redis peer`,
  b: `on Redis, admitting: at least ${GOALS.redisFloor.toFixed(2)} of the floor of one PING per event-loop turn`,
  c: `added server CPU per admitted request at most the floor's plus ${GOALS.addedCpuUs} µs`,
  d: `Redis CPU per admitted decision at most ${GOALS.redisCpuUs} µs`,
  e: 'in memory: ahead of every in-memory peer that sends rate-limit headers',
  f: `rejecting: at least ${GOALS.reject.toFixed(2)} of the bare route everywhere (memory and Redis)`,
};

/** The load shapes in words, as the report names them. */
export const LOAD_TEXT: Record<LoadShape, string> = {
  one: 'one subject',
  callers: 'many callers',
};

export interface GoalCheck {
  goal: GoalId;
  framework: Framework;
  load: LoadShape;
  /** What was checked, in words (which contender, regime, algorithm, peer). */
  subject: string;
  /** The Floodgate row the figure is about (for profiling a miss). */
  id: string;
  regime: Regime;
  figure: number;
  target: number;
  /** '>=' and '>' : the figure must reach the target; '<=': stay under it. */
  compare: '>=' | '>' | '<=';
  /** null: not measured (a row or reference missing from the run). */
  met: boolean | null;
  /** How far the figure is from the target when missed (always positive), 0 when met. */
  missedBy: number;
  /** The unit of figure and target: a ratio, a factor, µs. */
  unit: 'ratio' | 'factor' | 'µs';
}

/** A row's load shape ('one' for results from before it was recorded). */
export const loadOf = (row: ThroughputRow): LoadShape => row.load ?? 'one';

/** Where a row keeps its counts; inferred from the id for results written before `store` was recorded. */
export function storeOf(row: ThroughputRow): StoreKind | null {
  if (row.store !== undefined) return row.store;
  if (row.group === 'ceiling') return null;
  return row.id.includes('-memory') ? 'memory' : 'redis';
}

/** Rate-limit headers proper (quota headers) a server sent on an admitted response: Retry-After alone does not count. */
export function quotaHeaders(headers: HeadersSeen | undefined): string[] {
  return (headers?.admitted ?? []).filter((h) => !/^retry-after$/i.test(h));
}

/** Headers of a contender as the report shows them: admitted from either regime's server, 429 from the rejecting one. */
export function headersOf(rows: readonly ThroughputRow[], label: string): HeadersSeen | undefined {
  const admit = rows.find((r) => r.label === label && r.regime === 'admit')?.headers;
  const reject = rows.find((r) => r.label === label && r.regime === 'reject')?.headers;
  if (!admit && !reject) return undefined;
  return { admitted: admit?.admitted ?? reject?.admitted ?? null, limited: reject?.limited ?? admit?.limited ?? null };
}

/** The groups of one framework's rows. */
export function groupsOf(results: BenchResults, framework: Framework, load: LoadShape = 'one') {
  const rows = results.throughput.filter((r) => r.framework === framework && loadOf(r) === load);
  const regime = (list: ThroughputRow[], rg: Regime) => list.filter((r) => r.regime === rg);
  const floodgateMemory = rows.filter((r) => r.group === 'floodgate' && storeOf(r) === 'memory' && !/otel/i.test(r.id));
  const floodgateRedis = rows.filter((r) => r.group === 'floodgate' && storeOf(r) === 'redis');
  return {
    rows,
    ceiling: rows.find((r) => r.group === 'ceiling'),
    memory: rows.filter((r) => (r.group === 'floodgate' || r.group === 'peer') && storeOf(r) === 'memory'),
    redis: rows.filter((r) => (r.group === 'floodgate' || r.group === 'floodgate-hot' || r.group === 'peer') && storeOf(r) === 'redis'),
    floors: rows.filter((r) => r.group === 'floor'),
    floorTurn: rows.find((r) => r.group === 'floor' && r.id.includes('redis-floor-turn')),
    /** Floodgate in memory, no OpenTelemetry SDK. */
    floodgateMemory: (rg: Regime) => regime(floodgateMemory, rg)[0],
    /** Floodgate on Redis with the default algorithm if measured, else the first algorithm measured. */
    floodgateRedis: (rg: Regime) => {
      const list = regime(floodgateRedis, rg);
      return list.find((r) => r.id.includes(`floodgate-redis-${DEFAULT_ALGORITHM}/`)) ?? list[0];
    },
    floodgateRedisAll: (rg: Regime) => regime(floodgateRedis, rg),
    memoryPeers: (rg: Regime) => regime(rows, rg).filter((r) => r.group === 'peer' && storeOf(r) === 'memory'),
    redisPeers: (rg: Regime) => regime(rows, rg).filter((r) => r.group === 'peer' && storeOf(r) === 'redis'),
  };
}

/** The row with the highest ratio (NaN ratios last); undefined for none. */
export function best(rows: readonly ThroughputRow[]): ThroughputRow | undefined {
  let top: ThroughputRow | undefined;
  for (const r of rows) if (Number.isFinite(r.ratio) && (!top || r.ratio > top.ratio)) top = r;
  return top ?? rows[0];
}

function check(partial: Omit<GoalCheck, 'met' | 'missedBy'>): GoalCheck {
  const { figure, target, compare } = partial;
  if (!Number.isFinite(figure) || !Number.isFinite(target)) return { ...partial, met: null, missedBy: NaN };
  const met = compare === '>=' ? figure >= target : compare === '>' ? figure > target : figure <= target;
  return { ...partial, met, missedBy: met ? 0 : Math.abs(target - figure) };
}

/** Every goal for every framework and load shape in the run, in load, goal, then framework order. */
export function evaluateGoals(results: BenchResults): GoalCheck[] {
  const checks: GoalCheck[] = [];
  for (const load of LOAD_SHAPES) {
    const byGoal = new Map<GoalId, GoalCheck[]>();
    const push = (c: Omit<GoalCheck, 'met' | 'missedBy' | 'load'>) => {
      const list = byGoal.get(c.goal) ?? [];
      list.push(check({ ...c, load }));
      byGoal.set(c.goal, list);
    };
    for (const framework of FRAMEWORKS) {
      const g = groupsOf(results, framework, load);
      if (g.rows.length === 0) continue;
      const memAdmit = g.floodgateMemory('admit');
      const memReject = g.floodgateMemory('reject');
      const redisAdmit = g.floodgateRedis('admit');
      const redisReject = g.floodgateRedis('reject');
      if (redisAdmit) {
        const top = best(g.redisPeers('admit'));
        push({
          goal: 'a',
          framework,
          subject: `${redisAdmit.label} (${fix(redisAdmit.ratio)} × bare route) over ${top ? `${top.label} (${fix(top.ratio)})` : 'no Redis peer'}, admitting`,
          id: redisAdmit.id,
          regime: 'admit',
          figure: top && top.ratio > 0 ? redisAdmit.ratio / top.ratio : NaN,
          target: GOALS.redisPeers,
          compare: '>=',
          unit: 'factor',
        });
        push({ goal: 'b', framework, subject: `${redisAdmit.label}, admitting, × the per-turn floor`, id: redisAdmit.id, regime: 'admit', figure: redisAdmit.floorRatio ?? NaN, target: GOALS.redisFloor, compare: '>=', unit: 'ratio' });
        const bare = g.ceiling?.serverCpuUsPerRequest ?? NaN;
        const floorAdded = (g.floorTurn?.serverCpuUsPerRequest ?? NaN) - bare;
        push({
          goal: 'c',
          framework,
          subject: `${redisAdmit.label}, admitting: server CPU per request over the bare route's (${fix(bare, 1)} µs), against the per-turn floor's ${floorAdded >= 0 ? '+' : ''}${fix(floorAdded, 1)} µs`,
          id: redisAdmit.id,
          regime: 'admit',
          figure: (redisAdmit.serverCpuUsPerRequest ?? NaN) - bare,
          target: floorAdded + GOALS.addedCpuUs,
          compare: '<=',
          unit: 'µs',
        });
        push({
          goal: 'd',
          framework,
          subject: `${redisAdmit.label}, admitting: redis-server CPU per request`,
          id: redisAdmit.id,
          regime: 'admit',
          figure: redisAdmit.redisCpuUsPerRequest ?? NaN,
          target: GOALS.redisCpuUs,
          compare: '<=',
          unit: 'µs',
        });
      }
      for (const regime of ['admit', 'reject'] as const) {
        const fg = regime === 'admit' ? memAdmit : memReject;
        if (!fg) continue;
        const peers = g.memoryPeers(regime).filter((p) => quotaHeaders(headersOf(g.rows, p.label)).length > 0);
        const top = best(peers);
        push({
          goal: 'e',
          framework,
          subject: `${fg.label}, ${regime === 'admit' ? 'admitting' : 'rejecting'}, × bare route, against ${top ? `${top.label} (${fix(top.ratio)})` : 'no in-memory peer that sends rate-limit headers'}`,
          id: fg.id,
          regime,
          figure: fg.ratio,
          target: top ? top.ratio : NaN,
          compare: '>',
          unit: 'ratio',
        });
      }
      for (const fg of [memReject, redisReject]) {
        if (!fg) continue;
        push({ goal: 'f', framework, subject: `${fg.label}, rejecting, × bare route`, id: fg.id, regime: 'reject', figure: fg.ratio, target: GOALS.reject, compare: '>=', unit: 'ratio' });
      }
    }
    for (const goal of ['a', 'b', 'c', 'd', 'e', 'f'] as const) checks.push(...(byGoal.get(goal) ?? []));
  }
  return checks;
}

const fix = (x: number, digits = 2) => (Number.isFinite(x) ? x.toFixed(digits) : 'n/a');

/** One goal's figure and verdict in words: "0.93: met", "0.80: missed by 0.05", "17.2 µs: missed by 2.2 µs". */
export function verdict(c: GoalCheck): string {
  const digits = c.unit === 'µs' ? 1 : 2;
  const unit = c.unit === 'µs' ? ' µs' : c.unit === 'factor' ? '×' : '';
  const figure = `${fix(c.figure, digits)}${unit}`;
  if (c.met === null) return Number.isFinite(c.figure) ? `${figure}: nothing to compare with` : 'not measured';
  if (c.met) return `**${figure}** ✓ met`;
  // A share of the target only when the target is a positive amount (an added CPU target can be negative on a noisy run).
  const rel = c.target > 0 ? ` (${((c.missedBy / c.target) * 100).toFixed(0)}%)` : '';
  return `**${figure}** ✗ missed by ${fix(c.missedBy, digits)}${unit}${rel}`;
}
