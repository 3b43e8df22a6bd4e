// Child process of the flood bench: floods Floodgate's core on Redis with default failure options and reports every answer (who decided, how long it took, the loop's own stall meanwhile).
import { Cluster, Redis } from 'ioredis';
import { createLimiter, RedisStore, type AlgorithmName, type Decision, type Limiter, type LimitOptions } from '@floodgate/core';
import { DEADLINE_MARGIN_MS } from './bounds';
import { LoopWatch } from './loop-watch';

export interface FloodWorkerSetup {
  /** A single redis-server on this loopback port, or the startup nodes of a Cluster. */
  port?: number;
  cluster?: { host: string; port: number }[];
  /** Ready without waiting for a PING: an instance started while Redis is away (the outage run's autoscaler phase). */
  lazy?: boolean;
}

/** How the worker's RedisStore shares script calls: 'default' passes no `coalesce` option at all. */
export type FloodCoalesce = 'default' | 'off';

/**
 * One burst: `inFlight` decisions made in one turn at `startAt` (epoch ms, so that every process
 * starts together), on one subject or on a fresh subject each.
 */
/** The 'callers' bursts' callers (issue 49's row "400 callers x about 10, limit 5 each"). */
export const FLOOD_CALLERS = 400;

export interface FloodBurst {
  type: 'burst';
  algorithm: AlgorithmName;
  coalesce: FloodCoalesce;
  subjects: 'one' | 'fresh' | 'callers';
  limit: number;
  inFlight: number;
  prefix: string;
  /** The subject (or, for fresh subjects, the stem each request's subject is made from). */
  subject: string;
  startAt: number;
  /**
   * A fleet started just now (an autoscaler's new instances): the limiter is made at `startAt`,
   * with no call before the flood, so no instance has learned how many share the limit yet.
   */
  freshFleet?: boolean;
  /** RedisStore's `timeoutMs` (the late-Redis bench's deadlines); absent: the store's default. */
  timeoutMs?: number;
}

/**
 * The outage run's flooding caller, in two steps: 'warm' makes one limiter and sends a little
 * traffic on fresh subjects (the store healthy: the limiter sees it answer); 'flood' sends
 * `perTick` decisions on `subject` every `everyMs`, never more than `maxInFlight` unanswered,
 * until 'stop'.
 */
export interface FloodWarm {
  type: 'warm';
  limit: number;
  prefix: string;
  everyMs: number;
  perTick: number;
}
export interface FloodStart {
  type: 'flood';
  subject: string;
  everyMs: number;
  perTick: number;
  maxInFlight: number;
}

/** One process's answers. Times are epoch ms (performance.timeOrigin + now()). */
export interface FloodAnswers {
  type: 'answers';
  pid: number;
  /** RedisStore's deadline (`store.timeoutMs`): whatever its default is in the checkout measured. */
  deadlineMs: number;
  decisions: number;
  /** Decisions by `reason` (allowed, limited, blocked, fail-open, fail-local, ...): whatever reasons the checkout has. */
  byReason: Record<string, number>;
  /** Decisions marked `degraded` (the store did not decide). */
  degraded: number;
  /** Admitted decisions per subject (any reason: a degraded admission is an admission too). */
  admittedBySubject: Record<string, number>;
  /** When each admitted decision on the flood subject was answered (outage run only). */
  admittedAt?: number[];
  /** Every decision's wait, ms from the call to its answer, rounded to 0.1 ms. */
  waitsMs: number[];
  /** Decisions answered later than deadline + margin + the loop's stall while they were in flight, and the worst excess. */
  overAllowance: number;
  worstExcessMs: number;
  /** The longest single stall of this process's loop during the run. */
  maxLoopStallMs: number;
  /** CPU this process used (user + system) from the tally's start to its last answer, ms: what its decisions cost it, flood and all. */
  cpuMs: number;
  /** Calls that rejected instead of resolving with a Decision: a bug. */
  rejected: number;
  firstRejection?: string;
}

/** The outage run's autoscaler phase: an instance started during the outage makes its limiter and floods at once. */
export interface FloodJoin {
  type: 'join';
  limit: number;
  prefix: string;
  subject: string;
  everyMs: number;
  perTick: number;
  maxInFlight: number;
}

export type FloodWorkerMessage = { type: 'ready'; pid: number } | { type: 'warmed' } | FloodAnswers | { type: 'error'; message: string };

const loop = new LoopWatch(10, 60_000);
/** FLOOD_TRACE=1: each process prints (to its log) the first decisions past the allowance, with the loop's ticks meanwhile and its limiter's health. */
const TRACE = process.env.FLOOD_TRACE === '1';
let client: Redis | Cluster;

function send(message: FloodWorkerMessage): void {
  process.send?.(message);
}

/** `limit` per hour; token-bucket and gcra hold `limit` as their burst, refilled 1 per hour: nothing refills during a run. */
export function limitOptions(algorithm: AlgorithmName, limit: number): LimitOptions {
  return algorithm === 'token-bucket' || algorithm === 'gcra' ? { algorithm, burst: limit, refillPerSecond: 1 / 3600 } : { algorithm, limit, windowMs: '1h' };
}

/**
 * A fresh store (so a fresh circuit breaker: nothing carries over from the previous burst) and a
 * limiter with no failure option at all: what an app that sets none gets from this checkout.
 */
function limiterFor(coalesce: FloodCoalesce, algorithm: AlgorithmName | undefined, limit: number, prefix: string, timeoutMs?: number): { store: RedisStore; limiter: Limiter } {
  const deadline = timeoutMs === undefined ? {} : { timeoutMs };
  const store = coalesce === 'off' ? new RedisStore({ client, coalesce: false, ...deadline }) : new RedisStore({ client, ...deadline });
  const limits: LimitOptions = algorithm === undefined ? { limit, windowMs: '1h' } : limitOptions(algorithm, limit);
  // No logger either: the first-failure and breaker lines go to console, this child's log file.
  return { store, limiter: createLimiter({ store, prefix, ...limits }) };
}

/** Records answers as they come and judges each one against the deadline and this process's loop. */
class Tally {
  decisions = 0;
  degraded = 0;
  rejected = 0;
  firstRejection: string | undefined;
  readonly byReason: Record<string, number> = {};
  readonly admittedBySubject: Record<string, number> = {};
  readonly admittedAt: number[] = [];
  private readonly spans: { from: number; to: number; reason?: string }[] = [];
  readonly startedAt = performance.now();
  private readonly cpuAtStart = process.cpuUsage();

  constructor(
    private readonly deadlineMs: number,
    private readonly watched?: string,
    /** Its limiter's health snapshot, printed with a trace. */
    private readonly health?: () => unknown,
  ) {}

  /** One consume, timed from the call. */
  track(limiter: Limiter, subject: string): Promise<void> {
    const from = performance.now();
    return limiter.consume(subject).then(
      (d) => this.answer(subject, d, from),
      (error: unknown) => {
        this.rejected++;
        this.firstRejection ??= error instanceof Error ? (error.stack ?? error.message) : String(error);
        this.spans.push({ from, to: performance.now() });
      },
    );
  }

  private answer(subject: string, d: Decision, from: number): void {
    const to = performance.now();
    this.decisions++;
    this.byReason[d.reason] = (this.byReason[d.reason] ?? 0) + 1;
    if (d.degraded) this.degraded++;
    if (d.allowed) {
      this.admittedBySubject[subject] = (this.admittedBySubject[subject] ?? 0) + 1;
      if (subject === this.watched) this.admittedAt.push(performance.timeOrigin + to);
    }
    this.spans.push({ from, to, reason: d.reason });
  }

  /** The answers, once the loop has ticked past the last of them (its stall is then known). */
  async report(): Promise<FloodAnswers> {
    const cpu = process.cpuUsage(this.cpuAtStart);
    await new Promise((resolve) => setTimeout(resolve, 25));
    let overAllowance = 0;
    let worstExcessMs = -Infinity;
    const traced: unknown[] = [];
    const waitsMs: number[] = new Array(this.spans.length);
    this.spans.forEach(({ from, to }, i) => {
      const wait = to - from;
      waitsMs[i] = Math.round(wait * 10) / 10;
      const excess = wait - this.deadlineMs - DEADLINE_MARGIN_MS - loop.stalledWithin(from, to);
      if (excess > 0) {
        overAllowance++;
        if (TRACE && traced.length < 40) traced.push({ from: from - this.startedAt, wait, stall: loop.stalledWithin(from, to), reason: this.spans[i].reason, ticks: loop.ticksWithin(from, to) });
      }
      worstExcessMs = Math.max(worstExcessMs, excess);
    });
    if (TRACE && traced.length > 0) console.error(JSON.stringify({ pid: process.pid, traced, health: this.health?.() }));
    return {
      type: 'answers',
      pid: process.pid,
      deadlineMs: this.deadlineMs,
      decisions: this.decisions,
      byReason: this.byReason,
      degraded: this.degraded,
      admittedBySubject: this.admittedBySubject,
      ...(this.watched === undefined ? {} : { admittedAt: this.admittedAt }),
      waitsMs,
      overAllowance,
      worstExcessMs: Number.isFinite(worstExcessMs) ? worstExcessMs : 0,
      maxLoopStallMs: loop.worstWithin(this.startedAt, performance.now()),
      cpuMs: (cpu.user + cpu.system) / 1000,
      rejected: this.rejected,
      ...(this.firstRejection === undefined ? {} : { firstRejection: this.firstRejection }),
    };
  }
}

async function burst(job: FloodBurst): Promise<FloodAnswers> {
  const untilStart = async () => {
    const wait = job.startAt - Date.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  };
  // A fresh fleet makes its limiter as the flood starts (the bench loaded every script on every node before).
  if (job.freshFleet) await untilStart();
  const { store, limiter } = limiterFor(job.coalesce, job.algorithm, job.limit, job.prefix, job.timeoutMs);
  if (!job.freshFleet) {
    // Loads the script on the subject's node (NOSCRIPT, then EVAL) before the flood; fresh subjects land on every node of a Cluster.
    if (job.subjects === 'one') await limiter.peek(job.subject);
    else await Promise.all(Array.from({ length: 12 }, (_, k) => limiter.peek(`${job.subject}-warm-${process.pid}-${k}`)));
    await untilStart();
  }
  const tally = new Tally(store.timeoutMs, undefined, () => limiter.health());
  const calls: Promise<void>[] = new Array(job.inFlight);
  const fromUs = process.hrtime.bigint() / 1000n;
  // All in one turn: every decision is in flight at once, as a flood's are.
  // 'callers': FLOOD_CALLERS subjects shared by every process, decision i on caller i mod FLOOD_CALLERS.
  const subjectOf = (i: number) => (job.subjects === 'one' ? job.subject : job.subjects === 'callers' ? `${job.subject}-c${i % FLOOD_CALLERS}` : `${job.subject}-${process.pid}-${i}`);
  for (let i = 0; i < job.inFlight; i++) calls[i] = tally.track(limiter, subjectOf(i));
  await Promise.all(calls);
  // The burst's span on the monotonic clock a CPU profile's timestamps use (FLOOD_CPU_PROF): profiles can be cut to bursts.
  if (process.env.FLOOD_CPU_PROF) console.error(JSON.stringify({ burst: job.prefix, algorithm: job.algorithm, coalesce: job.coalesce, subjects: job.subjects, fromUs: String(fromUs), toUs: String(process.hrtime.bigint() / 1000n) }));
  return tally.report();
}

/** The outage run: one limiter for the whole run, as an app has. */
let outage: { store: RedisStore; limiter: Limiter; timer?: NodeJS.Timeout; tally?: Tally; calls: Set<Promise<void>> } | undefined;

async function warm(job: FloodWarm): Promise<void> {
  const { store, limiter } = limiterFor('default', undefined, job.limit, job.prefix);
  outage = { store, limiter, calls: new Set() };
  const background = new Tally(store.timeoutMs);
  let n = 0;
  outage.timer = setInterval(() => {
    for (let i = 0; i < job.perTick; i++) void background.track(limiter, `warm-${process.pid}-${n++}`);
  }, job.everyMs);
  await limiter.peek('warm-up');
}

/** An instance the autoscaler starts during the outage: its limiter is made now, and it floods at once. */
function join(job: FloodJoin): void {
  const { store, limiter } = limiterFor('default', undefined, job.limit, job.prefix);
  outage = { store, limiter, calls: new Set() };
  flood({ type: 'flood', subject: job.subject, everyMs: job.everyMs, perTick: job.perTick, maxInFlight: job.maxInFlight });
}

function flood(job: FloodStart): void {
  const run = outage;
  if (!run) throw new Error("'flood' before 'warm'");
  clearInterval(run.timer);
  const tally = (run.tally = new Tally(run.store.timeoutMs, job.subject));
  run.timer = setInterval(() => {
    for (let i = 0; i < job.perTick && run.calls.size < job.maxInFlight; i++) {
      const call = tally.track(run.limiter, job.subject).finally(() => run.calls.delete(call));
      run.calls.add(call);
    }
  }, job.everyMs);
}

async function stop(): Promise<FloodAnswers> {
  const run = outage;
  if (!run?.tally) throw new Error("'stop' before 'flood'");
  clearInterval(run.timer);
  await Promise.all(run.calls);
  return run.tally.report();
}

async function connect(setup: FloodWorkerSetup): Promise<void> {
  // As docs/failure-modes.md asks of an app's client: no resend after a reconnect, and an 'error' listener.
  client = setup.cluster
    ? new Cluster(setup.cluster, { redisOptions: { autoResendUnfulfilledCommands: false } })
    : new Redis({ host: '127.0.0.1', port: setup.port, autoResendUnfulfilledCommands: false });
  client.on('error', () => undefined);
  if (!setup.lazy) await client.ping();
}

process.on('message', (message: FloodBurst | FloodWarm | FloodStart | FloodJoin | { type: 'stop' } | { type: 'exit' }) => {
  const handle = async () => {
    if (message.type === 'burst') send(await burst(message));
    else if (message.type === 'warm') {
      await warm(message);
      send({ type: 'warmed' });
    } else if (message.type === 'flood') flood(message);
    else if (message.type === 'join') join(message);
    else if (message.type === 'stop') send(await stop());
    else {
      client.disconnect();
      process.exit(0);
    }
  };
  handle().catch((error: unknown) => send({ type: 'error', message: error instanceof Error ? (error.stack ?? error.message) : String(error) }));
});
process.on('disconnect', () => process.exit(0));
process.on('SIGTERM', () => process.exit(0));
connect(JSON.parse(process.argv[2] ?? '{}') as FloodWorkerSetup).then(
  () => send({ type: 'ready', pid: process.pid }),
  (error: Error) => process.send?.({ type: 'error', message: error.stack ?? error.message }, () => process.exit(1)),
);
