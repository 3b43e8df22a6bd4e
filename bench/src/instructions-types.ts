// The shapes of `pnpm bench:instructions`: its load shapes, one measured row, and a run's results file.
import type { Framework, Regime, StoreKind, ThroughputRow } from './types';

/**
 * one: every request from 127.0.0.1; callers: 10,000 callers in X-Forwarded-For (the servers trust
 * the loopback proxy). Both on `--connections` (default 1: one request per event-loop turn, so the
 * count does not depend on how busy the machine is; see instructions.ts).
 */
export type InstrLoad = 'one' | 'callers';
export const INSTR_LOADS: readonly InstrLoad[] = ['one', 'callers'];

export const LOAD_TITLES: Record<InstrLoad, string> = {
  one: 'one subject',
  callers: '10,000 callers (X-Forwarded-For)',
};

export interface InstrRow {
  framework: Framework;
  load: InstrLoad;
  regime: Regime | null;
  id: string;
  label: string;
  group: ThroughputRow['group'];
  store: StoreKind | null;
  /** Requests answered in the counted window. */
  responses: number;
  ok: number;
  limited: number;
  errors: number;
  /** Server (node --single-threaded) instructions per response, V8's compilers (`compileIr`) and, in runs that have `majorGcIr`, its major GC cycles left out. */
  serverIr: number;
  /** Instructions per response the server spent in V8's compilers in the counted window (JIT warm-up; not in `serverIr`). Absent in runs before it was split out. */
  compileIr?: number;
  /** Of `serverIr`, instructions per response in V8's collector (Heap::CollectGarbage, inclusive; in runs with `majorGcIr`, less the mark-compact counted there). Absent in runs before it was split out. */
  gcIr?: number;
  /** Instructions per response in V8's major GC cycles (incremental marking, its start, the mark-compact), not in `serverIr`: a cycle falls in a window or not by the run's history (instructions-callgrind.ts, majorGcLines). Absent in runs that counted it in `serverIr`. */
  majorGcIr?: number;
  /** redis-server instructions per response; null for contenders that do not use Redis. */
  redisIr: number | null;
  /** EVALSHA / EVAL / FCALL calls per response. */
  scriptCalls: number | null;
  /** Every command Redis ran per response (those scripts run included), from INFO commandstats. */
  redisCommands: number | null;
  /** Wall-clock seconds of the counted window (slow under valgrind: only a sanity figure). */
  windowS: number;
  /** CPU seconds the server's process (valgrind and node) used from its start to the dump: most of a contender's cost. Absent in older runs. */
  serverCoreS?: number;
  /** With `--keep-dumps`: the counted window's callgrind dump file, to read again (callgrind_annotate). */
  dump?: string;
  /** Set on a row taken from an earlier run (`--reuse`): that run's label. */
  from?: string;
  /** With `from`: the bare route of that run, same framework and load, over which this row's added instructions are counted. */
  bareIr?: number;
}

export interface InstrResults {
  kind: 'instructions';
  label: string;
  date: string;
  commit: string;
  /** The last commit that changed packages/ (Floodgate's code) when the run started, '+dirty' with uncommitted changes there. Absent in older runs. */
  codeCommit?: string;
  command: string;
  machine: string;
  settings: { requests: number; warmup: number; settle: number; connections: number; callers: number; parallel: number };
  durationS: number;
  /** CPU seconds of the whole run: the bench, its load generator and every child it waited for (servers, redis-servers, callgrind_annotate). Absent in older runs. */
  coreS?: number;
  /** Set on a run made with `--taken-only`: every row taken from other runs (`--resume`, `--reuse`), none measured. */
  takenOnly?: true;
  /** Set while the run is going (the file is rewritten after each contender) or when it was stopped early. */
  partial?: { measured: number; planned: number };
  rows: InstrRow[];
  /** Set when several runs are rendered as one block (`--render A,B`): the runs, each with its own line. */
  sources?: InstrResults[];
}
