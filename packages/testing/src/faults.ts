// The fault choreography, written once: a steady load, then Redis killed and restarted or paused and resumed, with the waits in between.
import { runInThisContext } from 'node:vm';
import type { RedisServer } from './redis-server';

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The store deadline of the scenarios that assert healthy phases: every healthy answer (before the
 * fault, after recovery) must beat it, so it sits far above this machine's noise
 * (docs/failure-modes.md records a 102 ms healthy worst case on a busy machine; the default 100 ms
 * would make a slow moment look like an outage). A kill is seen at once (the connection closes); a
 * pause is seen when calls pass this deadline.
 */
export const HEALTHY_DEADLINE_MS = 1_000;

/** Answers per route collected during each fault (at least 6 for a local route with a share of 5: 5 admitted, then denials). */
export const MIN_SAMPLES = 15;

/** Waits until `check` passes, every 20 ms; throws naming `what` after `timeoutMs`. */
export async function waitFor(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

export function latencyStats(values: number[]): { n: number; median: number; worst: number } {
  const sorted = [...values].sort((a, b) => a - b);
  return { n: sorted.length, median: sorted[Math.floor(sorted.length / 2)] ?? NaN, worst: sorted[sorted.length - 1] ?? NaN };
}

/** When and where one answer of a steady load was fired, and how long it took (performance.now() ms). */
export interface Fired {
  readonly route: string;
  readonly firedAt: number;
  readonly ms: number;
}

export interface SteadyLoad<S> {
  readonly samples: S[];
  readonly errors: unknown[];
  /** Stops firing and waits for every call in flight; fails if any is still pending after 10 s (a hang). */
  stop(): Promise<void>;
}

/** Fires every shot once every `everyMs`, never waiting for answers, like independent clients; keeps each answer with its route and timing. */
export function steadyLoad<R extends object>(shots: Record<string, () => Promise<R>>, everyMs = 5): SteadyLoad<R & Fired> {
  const samples: (R & Fired)[] = [];
  const errors: unknown[] = [];
  const pending = new Set<Promise<void>>();
  const timer = setInterval(() => {
    for (const [route, shot] of Object.entries(shots)) {
      const firedAt = performance.now();
      const p = shot().then(
        (answer) => void samples.push({ ...answer, route, firedAt, ms: performance.now() - firedAt }),
        (error: unknown) => void errors.push(error),
      );
      pending.add(p);
      void p.finally(() => pending.delete(p));
    }
  }, everyMs);
  return {
    samples,
    errors,
    async stop() {
      clearInterval(timer);
      let guard: NodeJS.Timeout | undefined;
      const hung = await Promise.race([
        Promise.all([...pending]).then(() => 0),
        new Promise<number>((resolve) => (guard = setTimeout(() => resolve(pending.size), 10_000))),
      ]);
      clearTimeout(guard);
      if (hung > 0) throw new Error(`${hung} requests still pending 10 s after the load stopped (hung)`);
    },
  };
}

/** At least `min` answers fired after `since` on every one of `routes` (a loaded machine fires fewer per second). */
export function enoughPerRoute(samples: readonly Fired[], routes: readonly string[], since: number, min = MIN_SAMPLES): boolean {
  return routes.every((route) => samples.filter((s) => s.route === route && s.firedAt > since).length >= min);
}

/** What the choreography watches, on the scenario's own load and breaker events. */
export interface FaultWatch {
  /** Enough answers fired after `since` (performance.now() ms) to judge a phase. */
  enough(since: number): boolean;
  /** The breaker has opened: the fault is seen. */
  breakerOpen(): boolean;
  /** Limiting is back, judged on what came after `since`. */
  resumed(since: number): boolean | Promise<boolean>;
}

export interface KillTimeline {
  readonly killedAt: number;
  /** The process has exited (its socket closed): an answer fired after this cannot come from it. */
  readonly downAt: number;
  /** Just before the restart. */
  readonly restartedAt: number;
  /** redis-server answers PING again. */
  readonly upAt: number;
}

/**
 * Under a running load: healthy answers, SIGKILL, the breaker opens, answers during the outage,
 * restart on the same port, limiting resumes, then `settleMs` for answers in flight. `openMs`
 * (default 600): how long the outage lasts at least once the breaker is open, time for its probes;
 * a scenario that checks the answers alone passes 0 and waits for enough of them only.
 */
export async function killAndRestart(
  server: RedisServer,
  watch: FaultWatch,
  steps: { onKill?: () => void; onRestarted?: () => void; settleMs?: number; openMs?: number } = {},
): Promise<KillTimeline> {
  await sleep(300);
  await waitFor('answers while healthy', () => watch.enough(0));
  const killedAt = performance.now();
  steps.onKill?.();
  await server.kill();
  const downAt = performance.now();
  await waitFor('the breaker to open', () => watch.breakerOpen());
  await sleep(steps.openMs ?? 600);
  await waitFor('answers during the outage', () => watch.enough(killedAt));
  const restartedAt = performance.now();
  await server.restart();
  const upAt = performance.now();
  steps.onRestarted?.();
  await waitFor('limiting to resume', () => watch.resumed(restartedAt));
  await sleep(steps.settleMs ?? 100);
  return { killedAt, downAt, restartedAt, upAt };
}

export interface PauseTimeline {
  readonly pausedAt: number;
  /** The breaker was seen open. */
  readonly openedAt: number;
  /** Just before SIGCONT. */
  readonly resumedAt: number;
}

/**
 * Under a running load: SIGSTOP, the breaker opens (calls pass the store deadline), a second of
 * answers while it is open (`openMs`, default 1000: time for its probes; a scenario that checks the
 * answers alone passes 0 and waits for enough of them only), SIGCONT, limiting resumes, then
 * `settleMs`. Redis is resumed whatever fails.
 */
export async function pauseAndResume(
  server: RedisServer,
  watch: FaultWatch,
  steps: { onPause?: () => void; settleMs?: number; openMs?: number } = {},
): Promise<PauseTimeline> {
  await sleep(300);
  const pausedAt = performance.now();
  steps.onPause?.();
  return whilePaused(server, async (resume) => {
    await waitFor('the breaker to open', () => watch.breakerOpen());
    const openedAt = performance.now();
    await sleep(steps.openMs ?? 1_000);
    await waitFor('answers while the breaker is open', () => watch.enough(openedAt));
    const resumedAt = performance.now();
    resume();
    await waitFor('limiting to resume', () => watch.resumed(resumedAt));
    await sleep(steps.settleMs ?? 100);
    return { pausedAt, openedAt, resumedAt };
  });
}

/**
 * SIGSTOPs `server`, runs `body`, and SIGCONTs it when `body` calls `resume` or ends, whichever
 * comes first, even if it throws: no test leaves a stopped redis-server behind.
 */
export async function whilePaused<T>(server: Pick<RedisServer, 'pause' | 'resume'>, body: (resume: () => void) => Promise<T>): Promise<T> {
  server.pause();
  let paused = true;
  const resume = () => {
    if (paused) server.resume();
    paused = false;
  };
  try {
    return await body(resume);
  } finally {
    resume();
  }
}

/**
 * Fails each test during which an unhandled rejection or uncaught exception reached the real
 * process (jest hands tests a sandboxed copy of `process`). Call at the top of a file or describe.
 */
export function failOnUnhandledErrors(): void {
  const host = runInThisContext('process') as NodeJS.Process;
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => void unhandled.push(reason);
  beforeAll(() => {
    host.on('unhandledRejection', onUnhandled);
    host.on('uncaughtException', onUnhandled);
  });
  afterAll(() => {
    host.off('unhandledRejection', onUnhandled);
    host.off('uncaughtException', onUnhandled);
  });
  afterEach(() => {
    expect(unhandled).toEqual([]);
  });
}

/**
 * Latency lines per route and phase, printed after the file's tests when FLOODGATE_PRINT_MEASUREMENTS
 * is set (docs/failure-modes.md quotes them). Call at the top of a file or describe.
 */
export function measurementLog(): { add(line: string): void; latencies(label: string, samples: readonly Fired[]): void } {
  const lines: string[] = [];
  afterAll(() => {
    if (process.env.FLOODGATE_PRINT_MEASUREMENTS) console.log(lines.join('\n'));
  });
  return {
    add: (line) => void lines.push(line),
    latencies(label, samples) {
      for (const route of [...new Set(samples.map((s) => s.route))]) {
        const s = latencyStats(samples.filter((x) => x.route === route).map((x) => x.ms));
        lines.push(`${label} ${route}: n=${s.n} median=${s.median.toFixed(2)} ms worst=${s.worst.toFixed(2)} ms`);
      }
    },
  };
}
