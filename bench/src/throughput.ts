// Throughput: every contender under autocannon, rounds alternating between contenders, ratios to the ceiling.
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { get as httpGet } from 'node:http';
import type { AlgorithmName } from '@floodgate/core';
import { parseCommandStats, type RedisServer } from '@floodgate/testing';
import { startServer, type RunningServer } from './children';
import { runLoad, type LoadResult } from './load';
import { FRAMEWORKS, frameworkInfo, type PeerSpec } from './frameworks';
import { pinPid, type Pinning } from './pinning';
import type { Progress } from './progress';
import { median, pairedRatio, ratio, sum } from './stats';
import { DEFAULT_ALGORITHM, RATE_LIMIT_HEADERS, type BenchCoalesce, type Framework, type HeadersSeen, type LimiterSpec, type LoadShape, type Regime, type RoundSample, type StoreKind, type ThroughputRow } from './types';

export interface ThroughputSettings {
  frameworks: readonly Framework[];
  rounds: number;
  secondsPerRun: number;
  warmupSeconds: number;
  connections: number;
  /** Floodgate-on-Redis algorithms to measure; primaryAlgorithm() of them is also used for the memory and hot-key lines. */
  algorithms: readonly AlgorithmName[];
  hotKeys: boolean;
  /** The memory, OpenTelemetry and hot-key lines' algorithm; default primaryAlgorithm(algorithms). */
  primary?: AlgorithmName;
  /** Load shapes to measure, each a run of every contender of its own (default ['one']). */
  loads?: readonly LoadShape[];
  /** Callers of the 'callers' load (default 10,000). */
  callers?: number;
  /** Leave out the OpenTelemetry, hot-key and PING-per-request lines (the goals need none of them). */
  lean?: boolean;
  /**
   * Also measure Floodgate on Redis (the primary algorithm) with each of these RedisStore `coalesce`
   * modes, beside the default: a contender each, in the same rounds (the goals read the default's row).
   */
  coalesce?: readonly BenchCoalesce[];
  /** Where processes run (default: not pinned). */
  pinning?: Pinning;
}

/** Callers in the many-caller load unless told otherwise. */
export const DEFAULT_CALLERS = 10_000;

/** A row's id in a load shape: the one-subject id as it always was, '@callers' after it in the many-caller load. */
export const inLoad = (id: string, load: LoadShape) => (load === 'one' ? id : `${id}@callers`);

export interface Contender {
  id: string;
  load: LoadShape;
  label: string;
  group: ThroughputRow['group'];
  store: StoreKind | null;
  framework: Framework;
  regime: Regime | null;
  limiter: LimiterSpec;
}

/** admit: nothing is ever limited (the limiter's own cost). reject: limit 1, so nearly every answer is a 429. */
export function regimeLimits(regime: Regime | null): Pick<LimiterSpec, 'limit' | 'windowMs'> {
  // A 1 h window keeps token-bucket's and gcra's refill rate (limit / window) in range for a 1e9 limit.
  // Rejecting, 1 per hour: with 10,000 callers a slow (busy) machine reaches each caller only every
  // few seconds, and a 1-minute window would hand each one a fresh unit every minute it is seen.
  return regime === 'reject' ? { limit: 1, windowMs: 3_600_000 } : { limit: 1_000_000_000, windowMs: 3_600_000 };
}

/** Peers as each library's docs set them up: in memory (its default store) and on Redis (per framework in frameworks.ts). */
export const PEERS: Record<Framework, readonly PeerSpec[]> = Object.fromEntries(
  FRAMEWORKS.map((framework) => [framework, frameworkInfo(framework).peers]),
) as Record<Framework, readonly PeerSpec[]>;

/**
 * The algorithm of the memory, OpenTelemetry and hot-key lines, and "Floodgate on Redis" in the
 * summary: the default if the run measures it, else the first one asked for.
 */
export function primaryAlgorithm(algorithms: readonly AlgorithmName[]): AlgorithmName {
  return algorithms.includes(DEFAULT_ALGORITHM) ? DEFAULT_ALGORITHM : (algorithms[0] ?? DEFAULT_ALGORITHM);
}

/** Hot-key mode needs the number of instances sharing a limit: a small deployment's. */
export const HOT_KEY_INSTANCES = 4;

/** The per-turn floor's id in a framework: the reference of the Redis group's floor ratio. */
export const floorTurnId = (framework: Framework, load: LoadShape = 'one') => inLoad(`${framework}/redis-floor-turn/admit`, load);

const nullIfNaN = (x: number) => (Number.isFinite(x) ? x : null);

let unique = 0;
const prefixFor = (id: string) => `fgb${(unique++).toString(36)}-${id.replace(/[^A-Za-z0-9]+/g, '').slice(0, 12)}`;

/**
 * Every contender of a framework, in the order the report lists them: the bare route; per regime
 * the memory group (Floodgate, Floodgate with the OpenTelemetry SDK, memory peers) and the Redis
 * group (Floodgate per algorithm, hot-key mode, Redis peers); then the floors (admitting only).
 */
export function contendersFor(framework: Framework, settings: ThroughputSettings, load: LoadShape = 'one'): Contender[] {
  const list: Contender[] = [
    {
      id: inLoad(`${framework}/none`, load),
      load,
      label: 'no limiter (bare route)',
      group: 'ceiling',
      store: null,
      framework,
      regime: null,
      limiter: { kind: 'none', prefix: 'none', ...regimeLimits(null) },
    },
  ];
  const first = settings.primary ?? primaryAlgorithm(settings.algorithms);
  for (const regime of ['admit', 'reject'] as const) {
    const add = (id: string, label: string, group: Contender['group'], limiter: Omit<LimiterSpec, 'limit' | 'windowMs' | 'prefix'>) =>
      list.push({
        id: inLoad(`${framework}/${id}/${regime}`, load),
        load,
        label,
        group,
        store: limiter.store ?? 'redis',
        framework,
        regime,
        limiter: { ...limiter, ...regimeLimits(regime), prefix: prefixFor(`${framework}${id}${regime}`) },
      });
    add('floodgate-memory', `Floodgate, memory (${first})`, 'floodgate', { kind: 'floodgate', store: 'memory', algorithm: first });
    // The same with an OpenTelemetry SDK registered: what exporting the metrics costs per request.
    if (!settings.lean) add('floodgate-memory-otel', `Floodgate, memory (${first}), OpenTelemetry SDK`, 'floodgate', { kind: 'floodgate', store: 'memory', algorithm: first, otel: true });
    // Peer ids: the kind on Redis (as in earlier results), the kind + '-memory' in memory.
    for (const peer of PEERS[framework].filter((p) => p.store === 'memory')) add(`${peer.kind}-memory`, peer.label, 'peer', { kind: peer.kind, store: 'memory' });
    for (const algorithm of settings.algorithms) {
      add(`floodgate-redis-${algorithm}`, `Floodgate, Redis (${algorithm})`, 'floodgate', {
        kind: 'floodgate',
        store: 'redis',
        algorithm,
      });
    }
    for (const mode of settings.coalesce ?? []) {
      add(`floodgate-redis-${first}-coalesce-${mode}`, `Floodgate, Redis (${first}), coalesce '${mode}'`, 'floodgate', { kind: 'floodgate', store: 'redis', algorithm: first, coalesce: mode });
    }
    if (settings.hotKeys && !settings.lean) {
      add(`floodgate-redis-hot-${first}`, `Floodgate, Redis, hot-key mode (${first}, ${HOT_KEY_INSTANCES} instances)`, 'floodgate-hot', {
        kind: 'floodgate',
        store: 'redis',
        algorithm: first,
        hotKeyInstances: HOT_KEY_INSTANCES,
      });
    }
    for (const peer of PEERS[framework].filter((p) => p.store === 'redis')) add(peer.kind, peer.label, 'peer', { kind: peer.kind, store: 'redis' });
  }
  // Floors: Redis round trips and nothing else. No limiter that asks Redis can keep more.
  const floor = (id: string, label: string, kind: LimiterSpec['kind']) =>
    list.push({
      id: inLoad(`${framework}/${id}/admit`, load),
      load,
      label,
      group: 'floor',
      store: 'redis',
      framework,
      regime: 'admit',
      limiter: { kind, ...regimeLimits('admit'), prefix: prefixFor(`${framework}${id}`) },
    });
  if (!settings.lean) floor('redis-floor', 'floor: one Redis PING per request, no limiting', 'redis-floor');
  floor('redis-floor-turn', 'floor: one Redis PING per event-loop turn, no limiting', 'redis-floor-turn');
  return list;
}

/**
 * Floodgate's own report, in the server's log, that its store failed (timeouts, an open circuit):
 * decisions in that stretch came from the failure mode, not from Redis. Undefined when none.
 */
export function storeTrouble(logFile: string): string | undefined {
  let text = '';
  try {
    text = readFileSync(logFile, 'utf8');
  } catch {
    return undefined;
  }
  const line = text.split('\n').find((l) => /\[floodgate\].*(circuit open|FG_STORE_TIMEOUT|FG_STORE_UNAVAILABLE|failed)/.test(l));
  return line?.trim().slice(0, 200);
}

/** Seconds of CPU redis-server has used (user + system), from INFO cpu. */
export function parseRedisCpu(info: string): number {
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? NaN);
  return field('used_cpu_user') + field('used_cpu_sys');
}

/**
 * Redis commands run between two INFO commandstats snapshots, minus the bench's own bookkeeping.
 * Redis counts the commands a script runs as well as the EVALSHA itself, so this is Redis's work,
 * not round trips.
 */
export function commandsBetween(before: Record<string, number>, after: Record<string, number>): number {
  const ignore = new Set(['info', 'config', 'ping', 'client', 'hello', 'command', 'select', 'script', 'memory', 'scan']);
  let total = 0;
  for (const [name, calls] of Object.entries(after)) {
    if (!ignore.has(name.toLowerCase())) total += calls - (before[name] ?? 0);
  }
  return total;
}

/**
 * The rate-limit headers among a response's header names (any case, e.g. Node's rawHeaders):
 * the known ones in RATE_LIMIT_HEADERS order and spelling, then any other whose name mentions a
 * rate limit or a retry, as the server spelled it (sorted, each once).
 */
export function rateLimitHeaders(names: Iterable<string>): string[] {
  const present = new Map<string, string>();
  for (const name of names) if (!present.has(name.toLowerCase())) present.set(name.toLowerCase(), name);
  const known = RATE_LIMIT_HEADERS.filter((h) => present.has(h.toLowerCase()));
  const knownLower = new Set<string>(RATE_LIMIT_HEADERS.map((h) => h.toLowerCase()));
  const others = [...present.entries()]
    .filter(([lower]) => !knownLower.has(lower) && /rate-?limit|retry/.test(lower))
    .map(([, spelled]) => spelled)
    .sort();
  return [...known, ...others];
}

/** One GET on a fresh connection: the status and the header names as sent (rawHeaders keeps their case). */
function probeOnce(url: string): Promise<{ status: number; names: string[] }> {
  return new Promise((resolve, reject) => {
    const req = httpGet(url, { agent: false, timeout: 10_000 }, (res) => {
      const names = res.rawHeaders.filter((_, i) => i % 2 === 0);
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, names }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${url}: no answer within 10 s`)));
    req.on('error', reject);
  });
}

/**
 * Which rate-limit headers a server sends, from real responses: its first admitted response and,
 * in the rejecting regime (limit 1), its first 429, which comes on the second request. Run right
 * after the servers start, before the warm-up: the rejecting servers are past their one request
 * for the window after it anyway.
 */
export async function probeHeaders(url: string, regime: Regime | null): Promise<HeadersSeen> {
  const seen: HeadersSeen = { admitted: null, limited: null };
  const attempts = regime === 'reject' ? 3 : 1;
  for (let i = 0; i < attempts && (seen.admitted === null || (regime === 'reject' && seen.limited === null)); i++) {
    const { status, names } = await probeOnce(url);
    if (status >= 200 && status < 300) seen.admitted ??= rateLimitHeaders(names);
    else if (status === 429) seen.limited ??= rateLimitHeaders(names);
  }
  return seen;
}

async function startAll(contenders: Contender[], redisPort: number, progress: Progress, cpus: string | undefined): Promise<Map<string, RunningServer>> {
  const servers = new Map<string, RunningServer>();
  // Two at a time: the machine has two cores and startup is CPU-bound.
  for (let i = 0; i < contenders.length; i += 2) {
    const batch = contenders.slice(i, i + 2);
    progress.step(`throughput: starting ${batch.map((c) => c.id).join(', ')}`);
    const started = await Promise.all(
      batch.map((c) => startServer({ framework: c.framework, redisPort, mounts: [{ path: '/', limiter: c.limiter }], trustProxy: c.load === 'callers' }, c.id, [], cpus)),
    );
    batch.forEach((c, j) => servers.set(c.id, started[j]));
  }
  return servers;
}

interface Measured {
  loads: LoadResult[];
  redisCalls: number;
  redisCpuS: number;
  serverCpuUs: number;
  /** Per run: server and Redis CPU, µs. */
  runs: { serverCpuUs: number; redisCpuUs: number }[];
}

/** Each round's figures of one contender; the ratio over the bare route's mean req/s of the same round. */
function roundSamples(m: Measured, ceiling: Measured, perRound: number): RoundSample[] {
  const out: RoundSample[] = [];
  for (let round = 0; round * perRound < m.loads.length; round++) {
    const own = m.loads.slice(round * perRound, (round + 1) * perRound);
    const runs = m.runs.slice(round * perRound, (round + 1) * perRound);
    const bare = ceiling.loads.slice(round * 2, round * 2 + 2);
    const responses = sum(own.map((l) => l.total));
    out.push({
      rps: Math.round(sum(own.map((l) => l.rps)) / own.length),
      ratio: ratio(sum(own.map((l) => l.rps)) / own.length, sum(bare.map((l) => l.rps)) / bare.length),
      serverCpuUs: responses ? sum(runs.map((r) => r.serverCpuUs)) / responses : null,
      redisCpuUs: responses ? sum(runs.map((r) => r.redisCpuUs)) / responses : null,
    });
  }
  return out;
}

/** One framework in one load shape: every contender, rounds alternating between them. */
async function measureFramework(redis: RedisServer, framework: Framework, load: LoadShape, settings: ThroughputSettings, progress: Progress): Promise<ThroughputRow[]> {
  const rows: ThroughputRow[] = [];
  const callers = load === 'callers' ? (settings.callers ?? DEFAULT_CALLERS) : undefined;
  const contenders = contendersFor(framework, settings, load);
  const servers = await startAll(contenders, redis.port, progress, settings.pinning?.serverCpus);
  const headers = new Map<string, HeadersSeen>();
  const tag = load === 'one' ? '' : ` (${callers!.toLocaleString('en-US')} callers)`;
  const admin = redis.client();
  try {
    // Which headers each one sends, from its own responses, before anything else reaches it.
    for (const c of contenders) {
      progress.step(`throughput${tag}: headers of ${c.id}`);
      headers.set(c.id, await probeHeaders(servers.get(c.id)!.url, c.regime));
    }
    for (const c of contenders) {
      progress.step(`throughput${tag}: warming ${c.id}`, settings.warmupSeconds * 1000);
      await runLoad({ url: servers.get(c.id)!.url, connections: settings.connections, durationS: settings.warmupSeconds, callers });
      // Rejecting with many callers: every caller spends its one request of the window before anything is measured.
      if (callers && c.regime === 'reject') await runLoad({ url: servers.get(c.id)!.url, connections: settings.connections, amount: callers, callers });
    }
    const measured = new Map<string, Measured>(contenders.map((c) => [c.id, { loads: [], redisCalls: 0, redisCpuS: 0, serverCpuUs: 0, runs: [] }]));
    const [ceilingContender] = contenders;
    const floorContender = contenders.find((c) => c.id === floorTurnId(framework, load));
    const others = contenders.slice(1).filter((c) => c !== floorContender);
    for (let round = 0; round < settings.rounds; round++) {
      const shift = (round * 3) % others.length;
      const rotated = [...others.slice(shift), ...others.slice(0, shift)];
      if (round % 2 === 1) rotated.reverse();
      // Every ratio divides by the ceiling: measure it twice a round (first, and halfway through).
      // The Redis group's floor ratio divides by the per-turn floor: it too runs twice a round,
      // a quarter and three quarters of the way through.
      const half = Math.ceil(rotated.length / 2);
      const [a, b] = [rotated.slice(0, half), rotated.slice(half)];
      const withFloor = (part: Contender[]) => {
        if (!floorContender) return part;
        const q = Math.ceil(part.length / 2);
        return [...part.slice(0, q), floorContender, ...part.slice(q)];
      };
      const order = [ceilingContender, ...withFloor(a), ceilingContender, ...withFloor(b)];
      for (const c of order) {
        progress.step(`throughput${tag}: round ${round + 1}/${settings.rounds} ${c.id}`, settings.secondsPerRun * 1000);
        const server = servers.get(c.id)!;
        // One INFO for both (cpu and commandstats) on the admin connection, before and after: a
        // short-lived connection per reading would cost each run the most of its overhead.
        const infoBefore = (await admin.info('everything')) as string;
        const serverBefore = await server.cpuUs();
        const result = await runLoad({ url: server.url, connections: settings.connections, durationS: settings.secondsPerRun, callers });
        const serverAfter = await server.cpuUs();
        const infoAfter = (await admin.info('everything')) as string;
        const [before, after] = [parseCommandStats(infoBefore), parseCommandStats(infoAfter)];
        const [cpuBefore, cpuAfter] = [parseRedisCpu(infoBefore), parseRedisCpu(infoAfter)];
        const m = measured.get(c.id)!;
        m.loads.push(result);
        m.redisCalls += commandsBetween(before, after);
        m.redisCpuS += cpuAfter - cpuBefore;
        m.serverCpuUs += serverAfter - serverBefore;
        m.runs.push({ serverCpuUs: serverAfter - serverBefore, redisCpuUs: (cpuAfter - cpuBefore) * 1e6 });
      }
    }
    const ceilingRun = measured.get(ceilingContender.id)!;
    const ceilingSamples = ceilingRun.loads.map((l) => l.rps);
    const ceilingCpu = ceilingRun.serverCpuUs / sum(ceilingRun.loads.map((l) => l.total));
    const floorSamples = floorContender ? measured.get(floorContender.id)!.loads.map((l) => l.rps) : [];
    for (const c of contenders) {
      const m = measured.get(c.id)!;
      const { loads, redisCalls, redisCpuS, serverCpuUs } = m;
      const responses = sum(loads.map((l) => l.total));
      const rps = median(loads.map((l) => l.rps));
      const samples = loads.map((l) => l.rps);
      // Runs per round: two for the ceiling and the per-turn floor, one for every other contender.
      const perRound = c === floorContender || c === ceilingContender ? 2 : 1;
      const inRedisGroup = c.store === 'redis' && c.group !== 'floor' && c.regime === 'admit';
      rows.push({
        framework,
        load,
        regime: c.regime,
        id: c.id,
        label: c.label,
        group: c.group,
        store: c.store,
        wiring: servers.get(c.id)!.wiring,
        samples: samples.map(Math.round),
        medianRps: Math.round(rps),
        // Paired by round (the ceiling runs twice a round), so drift in the machine's load cancels.
        ratio: c.group === 'ceiling' ? 1 : pairedRatio(samples, ceilingSamples, 2, perRound),
        floorRatio: inRedisGroup && floorSamples.length ? nullIfNaN(pairedRatio(samples, floorSamples, 2)) : null,
        headers: headers.get(c.id),
        latencyP50Ms: median(loads.map((l) => l.latencyP50Ms)),
        latencyP99Ms: median(loads.map((l) => l.latencyP99Ms)),
        okShare: responses ? sum(loads.map((l) => l.ok)) / responses : 0,
        limitedShare: responses ? sum(loads.map((l) => l.limited)) / responses : 0,
        errors: sum(loads.map((l) => l.errors)),
        redisCallsPerRequest: responses ? redisCalls / responses : null,
        redisCpuUsPerRequest: responses ? (redisCpuS * 1e6) / responses : null,
        serverCpuUsPerRequest: responses ? serverCpuUs / responses : null,
        cpuRatio: c.group === 'ceiling' ? 1 : responses ? ratio(ceilingCpu, serverCpuUs / responses) : NaN,
        rounds: roundSamples(m, ceilingRun, perRound),
      });
    }
  } finally {
    admin.disconnect();
    await Promise.all([...servers.values()].map((s) => s.stop()));
  }
  for (const row of rows) {
    const server = servers.get(row.id);
    if (server) row.storeTrouble = storeTrouble(server.logFile);
  }
  return rows;
}

/**
 * Every framework in every load shape. Rounds: each contender once per round (the ceiling and the
 * per-turn floor twice), the order rotated every round, so drift hits all alike. Pinned: this
 * process (autocannon) and redis-server move to the load cores for the section, and back after it.
 */
export async function runThroughput(
  redis: RedisServer,
  settings: ThroughputSettings,
  progress: Progress,
): Promise<ThroughputRow[]> {
  const rows: ThroughputRow[] = [];
  const pinning = settings.pinning;
  const all = `0-${Math.max(0, cpus().length - 1)}`;
  if (pinning?.pinned) {
    pinPid(process.pid, pinning.loadCpus!);
    if (redis.pid !== undefined) pinPid(redis.pid, pinning.loadCpus!);
  }
  try {
    for (const load of settings.loads ?? ['one']) {
      for (const framework of settings.frameworks) rows.push(...(await measureFramework(redis, framework, load, settings, progress)));
    }
  } finally {
    if (pinning?.pinned) {
      pinPid(process.pid, all);
      if (redis.pid !== undefined) pinPid(redis.pid, all);
    }
  }
  return rows;
}
