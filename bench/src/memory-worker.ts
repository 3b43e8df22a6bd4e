// Child process (run with --expose-gc): the memory store's heap bytes per caller, from heap deltas over many callers.
import { ALGORITHMS, MemoryStore, createLimiter, type AlgorithmName } from '@floodgate/core';

export interface MemoryWorkerJob {
  callers: number;
  /** Callers filled to the limit (fewer: each draws `limit` units). */
  filledCallers: number;
  limit: number;
}

export interface MemoryWorkerRow {
  algorithm: AlgorithmName;
  unitsPerCaller: number;
  callers: number;
  bytesPerCaller: number;
}

const gc = (globalThis as { gc?: () => void }).gc;

function settledHeap(): number {
  // Several passes: one full GC can leave garbage that a finaliser or weak ref just released.
  for (let i = 0; i < 4; i++) gc!();
  return process.memoryUsage().heapUsed;
}

/** Heap growth per caller: the store and limiter exist before the first reading, so only per-caller state counts. */
async function fill(algorithm: AlgorithmName, callers: number, units: number, limit: number) {
  const store = new MemoryStore({ maxKeys: callers * 2 });
  const limiter = createLimiter({ store, algorithm, limit, windowMs: 60_000 });
  const run = async (tag: string, n: number) => {
    for (let i = 0; i < n; i++) {
      const subject = `${tag}-${i}`;
      for (let u = 0; u < units; u++) await limiter.consume(subject);
    }
  };
  return { store, run };
}

async function perCaller(algorithm: AlgorithmName, callers: number, units: number, limit: number): Promise<number> {
  // A throw-away pass first, so that compiled code and lazily built tables are not counted as callers' state.
  await (await fill(algorithm, Math.min(callers, 1_000), units, limit)).run('warm', Math.min(callers, 1_000));
  const { store, run } = await fill(algorithm, callers, units, limit);
  const before = settledHeap();
  await run('caller', callers);
  const after = settledHeap();
  if (store.size < callers) throw new Error(`store holds ${store.size} of ${callers} callers`);
  return (after - before) / callers;
}

async function run(job: MemoryWorkerJob): Promise<{ rows: MemoryWorkerRow[]; emptyStoreBytes: number }> {
  if (!gc) throw new Error('run with --expose-gc');
  const rows: MemoryWorkerRow[] = [];
  for (const algorithm of ALGORITHMS) {
    rows.push({ algorithm, unitsPerCaller: 1, callers: job.callers, bytesPerCaller: await perCaller(algorithm, job.callers, 1, job.limit) });
    rows.push({
      algorithm,
      unitsPerCaller: job.limit,
      callers: job.filledCallers,
      bytesPerCaller: await perCaller(algorithm, job.filledCallers, job.limit, job.limit),
    });
  }
  // What a MemoryStore with default options costs before its first caller.
  const before = settledHeap();
  const empty = new MemoryStore();
  const emptyStoreBytes = settledHeap() - before;
  void empty.size;
  return { rows, emptyStoreBytes };
}

process.on('disconnect', () => process.exit(0));
// Exit cleanly on SIGTERM, so that a run under --cpu-prof writes its profile.
process.on('SIGTERM', () => process.exit(0));
run(JSON.parse(process.argv[2] ?? '{}') as MemoryWorkerJob).then(
  (result) => process.send?.({ type: 'done', ...result }, () => process.exit(0)),
  (error: Error) => process.send?.({ type: 'error', message: error.stack ?? error.message }, () => process.exit(1)),
);
