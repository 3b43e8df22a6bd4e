// Shared shapes: what a server under test runs, and the results file the report is rendered from.
import type { AlgorithmName } from '@floodgate/core';
import type { Framework } from './frameworks';
import type { MicroJob } from './micro-worker';

/** Floodgate's default algorithm (packages/core/src/engine/options.ts): what an app that names none runs. */
export const DEFAULT_ALGORITHM: AlgorithmName = 'sliding-window-counter';

// The list of frameworks and everything known about each lives in one registry (frameworks.ts).
export { FRAMEWORKS, type Framework } from './frameworks';

/** admit: a huge limit, every request allowed (the limiter's overhead). reject: limit 1, nearly all 429. */
export type Regime = 'admit' | 'reject';
export const REGIMES: readonly Regime[] = ['admit', 'reject'];

export type LimiterKind =
  | 'none'
  | 'floodgate'
  | 'express-rate-limit'
  | 'fastify-rate-limit'
  | 'koa-ratelimit'
  | 'rate-limiter-flexible'
  /** @nestjs/throttler's ThrottlerGuard (its default in-memory storage, or @nest-lab/throttler-storage-redis). */
  | 'nestjs-throttler'
  /** hono-rate-limiter's rateLimiter (its MemoryStore, or its RedisStore on ioredis). */
  | 'hono-rate-limiter'
  | 'naive'
  /** No limiting: one Redis round trip (PING) per request. What any exact shared limiter costs at least. */
  | 'redis-floor'
  /** No limiting: one Redis round trip (PING) per event-loop turn, shared by that turn's requests: Floodgate's design at no cost. */
  | 'redis-floor-turn';

/**
 * The shape of the load: 'one', every request from 127.0.0.1 (one subject); 'callers', each request
 * from the next of many addresses in X-Forwarded-For (10,000 by default), the server trusting one hop.
 */
export type LoadShape = 'one' | 'callers';
export const LOAD_SHAPES: readonly LoadShape[] = ['one', 'callers'];

/** One round of one contender: its req/s, its share of the bare route that round, and its CPU per response. */
export interface RoundSample {
  rps: number;
  /** This round's req/s over the bare route's mean req/s in the same round (1 for the bare route). */
  ratio: number;
  /** Server CPU (process and children) per response, µs. */
  serverCpuUs: number | null;
  /** redis-server CPU per response, µs. */
  redisCpuUs: number | null;
}

/** Where a contender keeps its counts: in the server process, or in Redis (the floors only talk to Redis). */
export type StoreKind = 'memory' | 'redis';

/**
 * The rate-limit headers the report looks for, in the order it prints them (HTTP header names are
 * case-insensitive: these are the canonical spellings).
 */
export const RATE_LIMIT_HEADERS = [
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
  'RateLimit-Policy',
  'RateLimit',
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'Retry-After',
] as const;

/**
 * Headers a contender's server was seen to send, read from real responses (one admitted, one 429)
 * right after it started: known names from RATE_LIMIT_HEADERS, then any other header whose name
 * mentions a rate limit, as the server spelled it. null: no such response was seen.
 */
export interface HeadersSeen {
  admitted: string[] | null;
  limited: string[] | null;
}

/** One limiter as a server mounts it. */
export interface LimiterSpec {
  kind: LimiterKind;
  store?: StoreKind;
  algorithm?: AlgorithmName;
  /** Floodgate hot-key mode with this many instances sharing the limit (only when core has it). */
  hotKeyInstances?: number;
  limit: number;
  windowMs: number;
  /** Redis key prefix / namespace, unique per contender so no two share state. */
  prefix: string;
  /** When set, the subject is this request header (race runs use a fresh subject per repetition); else the IP. */
  keyHeader?: string;
  /** Floodgate with an OpenTelemetry SDK MeterProvider (a reader attached, so every instrument aggregates), as an app exporting metrics runs it. */
  otel?: boolean;
  /** Floodgate on Redis with this RedisStore `coalesce` mode (bench --coalesce); unset: the store's default. */
  coalesce?: BenchCoalesce;
}

/** RedisStore's coalesce modes, as `--coalesce` names them ('off' for false). */
export const BENCH_COALESCE = ['turn', 'in-flight', 'off'] as const;
export type BenchCoalesce = (typeof BENCH_COALESCE)[number];

/** The micro section: µs per operation of each case, per checkout measured. */
export interface MicroRun {
  job: MicroJob;
  rounds: number;
  /** Side labels, the older checkout first when there are two. */
  sides: string[];
  /** Per case: the median over rounds of each side's µs per operation, in `sides` order; with `--alloc`, of its bytes allocated per decision too. */
  rows: { name: string; us: number[]; bytes?: number[]; answered: string }[];
}

/** A child process serving one or more limiters on loopback. */
export interface ServerSpec {
  framework: Framework;
  /** One mount at '/' is applied app-wide (as users mount it); several are mounted per route. */
  mounts: { path: string; limiter: LimiterSpec }[];
  redisPort?: number;
  /** ioredis `enableAutoPipelining`: commands issued in one event-loop turn go out in one write. Default false. */
  autoPipelining?: boolean;
  /**
   * Trust the loopback proxy (Express 'trust proxy' 'loopback', Fastify trustProxy '127.0.0.1', Koa proxy with maxIpsCount
   * 1): the client address is X-Forwarded-For's, as the many-caller load sends it. Default false.
   */
  trustProxy?: boolean;
}

/** How Floodgate was wired in a server: through its adapter, or (adapter not built yet) core in a few lines. */
export type Wiring = 'adapter' | 'inline-core' | 'n/a';

export interface ThroughputRow {
  framework: Framework;
  /** The load's shape (absent in results from before it was recorded: 'one'). */
  load?: LoadShape;
  /** null for the no-limiter ceiling, which serves both regimes. */
  regime: Regime | null;
  id: string;
  label: string;
  /** 'floor': no limiting at all, only Redis round trips: the most a Redis-backed limiter can keep. */
  group: 'ceiling' | 'floodgate' | 'floodgate-hot' | 'peer' | 'floor';
  /** Where the limiter keeps its counts (null for the bare route). Absent in results from before it was recorded: see storeOf(). */
  store?: StoreKind | null;
  wiring: Wiring;
  /** Requests per second, one sample per round. */
  samples: number[];
  medianRps: number;
  /** Share of the bare route (the framework's ceiling), paired by round: median over rounds of this req/s / the ceiling's that round; 1 for the ceiling itself. */
  ratio: number;
  /**
   * Admitting Redis contenders: the same, paired by round, against the per-turn PING floor
   * ('redis-floor-turn', measured twice a round like the ceiling). null elsewhere, or when the
   * floor was not measured.
   */
  floorRatio?: number | null;
  /** Rate-limit headers seen on this server's responses (absent in older results). */
  headers?: HeadersSeen;
  latencyP50Ms: number;
  latencyP99Ms: number;
  /** Shares of all responses over every round. */
  okShare: number;
  limitedShare: number;
  errors: number;
  /** Redis commands per HTTP response (INFO commandstats delta over the measured runs; a script's own commands count). */
  redisCallsPerRequest: number | null;
  /** redis-server CPU time per HTTP response, in µs (INFO cpu delta over the measured runs). */
  redisCpuUsPerRequest: number | null;
  /** The server process's own CPU time (user + system) per response, in µs. */
  serverCpuUsPerRequest: number | null;
  /**
   * The ceiling's server CPU per request / this one's: the throughput ratio a CPU-bound server would
   * show, and steadier than req/s when other processes share the machine.
   */
  cpuRatio: number;
  /** The first line where Floodgate logged a store failure during the run (its decisions then came from the failure mode). */
  storeTrouble?: string;
  /** Each round's figures, for the spread (absent in older results). */
  rounds?: RoundSample[];
}

export interface RedisCeilingRow {
  algorithm: AlgorithmName;
  /** redis-benchmark EVALSHA of Floodgate's script, `connections` clients, one subject. */
  redisBenchmarkRps: number;
  /** The same on one connection with `connections` commands pipelined: how one Node process talks to Redis. */
  redisBenchmarkPipelinedRps: number;
  /** A raw ioredis EVALSHA loop from Node, same concurrency: what any Node client can reach. */
  ioredisRps: number;
  /** createLimiter + RedisStore consume() loop, same concurrency. */
  coreRps: number;
  /**
   * Share of the core's decisions that Redis made and admitted. Below 1, some were answered without
   * Redis (the block cache) and the core's rate is not comparable. Absent in runs before it was recorded.
   */
  coreAdmittedShare?: number;
  /** coreRps over the highest of the three other figures: the most this Redis was seen to do. */
  ratio: number;
  connections: number;
}

export interface RaceRow {
  id: string;
  label: string;
  group: 'floodgate' | 'floodgate-hot' | 'peer' | 'naive';
  processes: number;
  limit: number;
  attemptsPerRepetition: number;
  /** Admitted count in each repetition. */
  admitted: number[];
  medianRatio: number;
  maxRatio: number;
}

export interface AccuracyPatternResult {
  pattern: string;
  attempts: number;
  admitted: number;
  /** The most admitted in any window-long span, from the exact log of admission times. */
  maxInWindow: number;
  ratio: number;
}

export interface AccuracyRow {
  algorithm: AlgorithmName;
  limit: number;
  windowMs: number;
  patterns: AccuracyPatternResult[];
  worstRatio: number;
}

export interface RedisMemoryRow {
  library: string;
  algorithm: string;
  limit: number;
  keys: number;
  bytes: number;
}

export interface MemoryStoreRow {
  algorithm: AlgorithmName;
  /** Units each caller drew: 1, or the limit (filled). */
  unitsPerCaller: number;
  limit: number;
  callers: number;
  /** Median over samples of the heap a filled store frees when dropped, less an unused one's, per caller (memory-worker.ts). */
  bytesPerCaller: number;
  /** Each sample's figure (absent in older results). */
  samples?: number[];
  /**
   * The noise bound, bytes per caller: half the samples' spread plus the heap readings' own jitter.
   * A figure not above it is reported as below measurement noise (absent in older results: then 0).
   */
  noiseBytes?: number;
}

export interface ProfileFrame {
  functionName: string;
  url: string;
  line: number;
  selfPercent: number;
}

export interface ProfileRow {
  id: string;
  label: string;
  rps: number;
  /** Busy (non-idle) CPU time of the server per request while profiled, in µs. */
  cpuUsPerRequest?: number | null;
  top: ProfileFrame[];
  /** Self time by package or area (node internals, ioredis, express, floodgate core, ...). */
  byArea: { area: string; selfPercent: number }[];
  /** The .cpuprofile (open it in Chrome DevTools or speedscope). */
  file?: string;
}

export interface BenchMeta {
  date: string;
  /** The command line that ran it (absent in older results). */
  command?: string;
  mode: 'quick' | 'full';
  durationS: number;
  node: string;
  redis: string;
  os: string;
  cpu: string;
  cores: number;
  memoryGiB: number;
  loadAverageStart: number[];
  loadAverageEnd: number[];
  versions: Record<string, string>;
  settings: {
    rounds: number;
    secondsPerRun: number;
    warmupSeconds: number;
    connections: number;
    raceProcesses: number;
    /** Callers in the many-caller load (absent in older results). */
    callers?: number;
  };
  /** How the throughput run placed its processes on cores (absent in older results: not pinned). */
  pinning?: { pinned: boolean; how: string };
  hotKeys: boolean;
  notes: string[];
}

export interface BenchResults {
  meta: BenchMeta;
  throughput: ThroughputRow[];
  redisCeiling: RedisCeilingRow[];
  race: RaceRow[];
  accuracy: AccuracyRow[];
  redisMemory: RedisMemoryRow[];
  memoryStore: MemoryStoreRow[];
  /** Heap of one empty MemoryStore with default options (its LRU preallocates per slot). */
  memoryStoreEmptyBytes: number | null;
  /** Heap one limiter holds before its first caller, on a store made elsewhere (its fallback included); null when not measured. */
  limiterBytes?: number | null;
  profiles: ProfileRow[];
  /** The micro section (`pnpm bench:micro`'s cases); null or absent when not run. */
  micro?: MicroRun | null;
  /** The flood section: every recorded run (bench/flood-runs.json), before / after; absent when none. */
  flood?: FloodRun[];
}

/** Where a flood ran: one redis-server, or a real 3-master Redis Cluster. */
export type FloodTopology = 'single' | 'cluster';
export const FLOOD_TOPOLOGIES: readonly FloodTopology[] = ['single', 'cluster'];

/** One burst scenario of the flood section, over its repetitions (`pnpm bench:flood`, src/flood.ts). */
export interface FloodScenarioRow {
  id: string;
  topology: FloodTopology;
  /** 'one': every decision on one subject; 'fresh': a fresh subject per decision; 'callers': 400 subjects shared by every process (issue 49), decision i on caller i mod 400. */
  subjects: 'one' | 'fresh' | 'callers';
  /** 'default': no `coalesce` option; 'off': `coalesce: false`. */
  coalesce: 'default' | 'off';
  /**
   * 'fresh': processes started for each repetition, their limiters made as the flood starts (an
   * autoscaler's new instances: none has learned how many share the limit). Absent: a fleet up a while.
   */
  fleet?: 'fresh';
  algorithm: AlgorithmName;
  processes: number;
  inFlight: number;
  limit: number;
  repetitions: number;
  /** Decisions answered, over every repetition. */
  decisions: number;
  /** Admitted per repetition: on the one subject ('one'), or in all ('fresh'). */
  admittedPerRepetition: number[];
  /** The most any one subject was admitted in one repetition, and the sum over subjects of what each got past the limit. */
  maxAdmittedPerSubject: number;
  overLimitTotal: number;
  /** Decisions by reason, over every repetition. */
  byReason: Record<string, number>;
  /** Decisions the store did not make: `degraded` ones (fail-open, fail-local, ...), and block-cache denials. */
  degraded: number;
  withoutStore: number;
  /** RedisStore's deadline in the checkout measured. */
  deadlineMs: number;
  p99WaitMs: number;
  maxWaitMs: number;
  /** Answers later than deadline + 50 ms + their process's loop stall meanwhile, and the worst excess (negative: none late). */
  overAllowance: number;
  worstExcessMs: number;
  /** The longest stall of any child's event loop during the bursts. */
  maxLoopStallMs: number;
  /**
   * The flooding processes' CPU (user + system) per decision, µs, over every repetition: what a
   * decision costs its process in the flood (the loop stalls are mostly this work on a starved
   * CPU). Absent in runs recorded before it was measured.
   */
  cpuUsPerDecision?: number;
  /** Calls that rejected instead of answering (a bug if ever above 0). */
  rejected: number;
}

/** The outage run: a caller floods while Redis is killed (or paused) for `outageMs`, default options. */
export interface FloodOutageRow {
  fault: 'kill' | 'pause';
  outageMs: number;
  processes: number;
  limit: number;
  /** Decisions per second the caller sent, over all processes. */
  ratePerSecond: number;
  decisions: number;
  /** The caller's admissions answered while Redis was out, and after it answered again (till the run's end). */
  admittedDuringOutage: number;
  admittedAfter: number;
  afterMs: number;
  /** The bound the run is judged against (src/bounds.ts) for this many processes. */
  bound: number;
  /**
   * The autoscaler phase: processes started halfway through the outage (they never reached Redis)
   * that flood the same caller at once; their admissions are in `admittedDuringOutage`. Absent in
   * runs recorded before it existed.
   */
  joined?: number;
  byReason: Record<string, number>;
  degraded: number;
  deadlineMs: number;
  p99WaitMs: number;
  maxWaitMs: number;
  overAllowance: number;
  worstExcessMs: number;
  maxLoopStallMs: number;
  rejected: number;
}

/** One recorded run of the flood bench, labelled (e.g. 'before', 'after') with the commit it measured. */
export interface FloodRun {
  label: string;
  commit: string;
  /** Packages differed from that commit when measured (uncommitted changes). */
  dirty: boolean;
  date: string;
  command: string;
  mode: 'quick' | 'full';
  durationS: number;
  machine: string;
  loadAverageStart: number[];
  loadAverageEnd: number[];
  scenarios: FloodScenarioRow[];
  outages: FloodOutageRow[];
  notes: string[];
}
