// Child process (run with --expose-gc): the memory store's heap bytes per caller, from the heap a filled store frees when dropped.
//
// How, and why not "heap after filling minus heap before", as it was: between those two readings
// the limiter runs hundreds of thousands of decisions, and the heap then changes for reasons that
// are not the store's. Core remembers recent callers' Redis keys in a process-wide memo (keys.ts,
// bounded: it starts over past 20,000 keys), so a run that crossed that bound freed up to 20,000
// remembered keys of earlier runs in the middle of the measurement; with 5,000 callers filled to
// 100 that read -540 bytes per caller for gcra, and other figures were off by as much either way
// (the memo's entries of this run's callers counted too, or not, depending on where it stood).
// So each sample here:
//   1. fills a store (after a warm-up pass, so the code is compiled already), with identities too
//      long for the key memo (over its 512-character bound): the store still keeps the same
//      fixed-length key per caller, and the memo holds none of them;
//   2. reads the heap (full GCs, each followed by a turn of the event loop so that finalisers and
//      weakly held objects kept for the turn are released), drops the store and its limiter,
//      reads it again: the difference is what the store held, and nothing ran in between;
//   3. subtracts the same two readings around an unused store and limiter of the same size (the
//      LRU preallocates its slots), and divides by the callers.
// Several samples; the figure is their median, the noise their spread (half of max - min) plus the
// spread of the heap readings themselves. The report prints a figure not above its noise as such.
import { ALGORITHMS, MemoryStore, createLimiter, type AlgorithmName } from '@floodgate/core';

export interface MemoryWorkerJob {
  callers: number;
  /** Callers filled to the limit (fewer: each draws `limit` units). */
  filledCallers: number;
  limit: number;
  /** Samples per figure (default 3). */
  samples?: number;
}

export interface MemoryWorkerRow {
  algorithm: AlgorithmName;
  unitsPerCaller: number;
  callers: number;
  /** Median over the samples. */
  bytesPerCaller: number;
  /** Each sample's bytes per caller. */
  samples: number[];
  /** The measurement's noise per caller, in bytes: a figure within it is not resolved. */
  noiseBytes: number;
}

const gc = (globalThis as { gc?: () => void }).gc;
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * The heap once settled: full GCs, each followed by a turn of the event loop (the first GC after a
 * burst of work leaves some to the next ones), then three readings a GC apart: their median, and
 * their spread (the jitter left: code and feedback allocated or flushed, a few tens of KB).
 */
async function settledHeap(): Promise<{ bytes: number; spread: number }> {
  for (let i = 0; i < 4; i++) {
    gc!();
    await turn();
  }
  const readings: number[] = [];
  for (let i = 0; i < 3; i++) {
    gc!();
    await turn();
    readings.push(process.memoryUsage().heapUsed);
  }
  return { bytes: median(readings), spread: Math.max(...readings) - Math.min(...readings) };
}

/** Longer than core's key memo takes (MEMO_MAX_INPUT, 512 characters with prefix and scope, in keys.ts). */
const UNMEMOISED = 'x'.repeat(600);

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

async function consumeAll(limiter: ReturnType<typeof createLimiter>, tag: string, callers: number, units: number): Promise<void> {
  for (let i = 0; i < callers; i++) {
    // The identity is garbage after its decisions: the store keeps only the key derived from it.
    const subject = `${tag}-${i}-${UNMEMOISED}`;
    for (let u = 0; u < units; u++) await limiter.consume(subject);
  }
}

let runs = 0;

/** Bytes a store (and its limiter) holds: heap with it, minus heap once it is dropped. `fill` false: an unused one. */
async function heldBytes(algorithm: AlgorithmName, callers: number, units: number, limit: number, fill: boolean): Promise<{ bytes: number; noise: number }> {
  let store: MemoryStore | undefined = new MemoryStore({ maxKeys: callers * 2 });
  let limiter: ReturnType<typeof createLimiter> | undefined = createLimiter({ store, algorithm, limit, windowMs: 60_000 });
  if (fill) {
    await consumeAll(limiter, `caller${runs++}`, callers, units);
    if (store.size < callers) throw new Error(`store holds ${store.size} of ${callers} callers`);
  }
  const withStore = await settledHeap();
  void store.size;
  store = undefined;
  limiter = undefined;
  const without = await settledHeap();
  return { bytes: withStore.bytes - without.bytes, noise: Math.max(withStore.spread, without.spread) };
}

async function perCaller(algorithm: AlgorithmName, callers: number, units: number, limit: number, samples: number): Promise<Omit<MemoryWorkerRow, 'algorithm'>> {
  // A throw-away pass first, so that compiled code and lazily built tables are not counted as callers' state.
  const warm = createLimiter({ store: new MemoryStore({ maxKeys: 2_000 }), algorithm, limit, windowMs: 60_000 });
  await consumeAll(warm, `warm${runs++}`, Math.min(callers, 1_000), units);
  const values: number[] = [];
  let readingNoise = 0;
  for (let s = 0; s < samples; s++) {
    const filled = await heldBytes(algorithm, callers, units, limit, true);
    const empty = await heldBytes(algorithm, callers, units, limit, false);
    values.push((filled.bytes - empty.bytes) / callers);
    readingNoise = Math.max(readingNoise, (filled.noise + empty.noise) / callers);
  }
  const spread = values.length > 1 ? (Math.max(...values) - Math.min(...values)) / 2 : 0;
  return { unitsPerCaller: units, callers, bytesPerCaller: median(values), samples: values, noiseBytes: spread + readingNoise };
}

async function run(job: MemoryWorkerJob): Promise<{ rows: MemoryWorkerRow[]; emptyStoreBytes: number; limiterBytes: number }> {
  if (!gc) throw new Error('run with --expose-gc');
  const samples = Math.max(1, job.samples ?? 3);
  const rows: MemoryWorkerRow[] = [];
  for (const algorithm of ALGORITHMS) {
    rows.push({ algorithm, ...(await perCaller(algorithm, job.callers, 1, job.limit, samples)) });
    rows.push({ algorithm, ...(await perCaller(algorithm, job.filledCallers, job.limit, job.limit, samples)) });
  }
  // What a MemoryStore with default options costs before its first caller (median of the samples).
  const empty: number[] = [];
  for (let s = 0; s < samples; s++) {
    let store: MemoryStore | undefined = new MemoryStore();
    const withStore = await settledHeap();
    void store.size;
    store = undefined;
    empty.push(withStore.bytes - (await settledHeap()).bytes);
  }
  // What one limiter itself costs before its first caller, on a store made elsewhere (as a route's
  // limiter shares its app's store): its own bookkeeping, fallback included (median of the samples).
  const shared = new MemoryStore();
  const limiterHeld: number[] = [];
  for (let s = 0; s < samples; s++) {
    let limiters: ReturnType<typeof createLimiter>[] | undefined = [];
    for (let i = 0; i < LIMITERS; i++) limiters.push(createLimiter({ store: shared, limit: 100, windowMs: 60_000, prefix: `l${s}-${i}` }));
    const withLimiters = await settledHeap();
    void limiters.length;
    limiters = undefined;
    limiterHeld.push((withLimiters.bytes - (await settledHeap()).bytes) / LIMITERS);
  }
  return { rows, emptyStoreBytes: median(empty), limiterBytes: median(limiterHeld) };
}

/** Limiters made at once for the per-limiter figure: enough that a few KB of heap jitter is small beside them. */
const LIMITERS = 20;

process.on('disconnect', () => process.exit(0));
// Exit cleanly on SIGTERM, so that a run under --cpu-prof writes its profile.
process.on('SIGTERM', () => process.exit(0));
run(JSON.parse(process.argv[2] ?? '{}') as MemoryWorkerJob).then(
  (result) => process.send?.({ type: 'done', ...result }, () => process.exit(0)),
  (error: Error) => process.send?.({ type: 'error', message: error.stack ?? error.message }, () => process.exit(1)),
);
