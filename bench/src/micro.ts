// `pnpm bench:micro`: µs per decision of the core on the memory store, of the HTTP pipeline and of
// each adapter's per-request work (stand-in request and response objects), in a tight loop.
//
//   pnpm bench:micro                       this checkout
//   pnpm bench:micro --against ../old      also another checkout (e.g. a worktree of an older
//                                          commit, after `pnpm install`), interleaved run by run
//   pnpm bench:micro --only core,http --ops 50000 --samples 9 --rounds 3
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { buildAgainst, buildChildren, OUT_DIR } from './build';
import { BENCH_DIR, loadAverage, machine } from './env';
import type { MicroJob, MicroResult } from './micro-worker';
import { allocTable, microTable } from './report';
import { median } from './stats';
import type { MicroRun } from './types';

export type { MicroRun } from './types';

const HELP = `Usage: pnpm bench:micro [options]

  --ops N          operations per sample (default 20000)
  --samples N      samples per case and round; the median is reported (default 7)
  --rounds N       runs of every case, alternating checkouts (default 3)
  --only LIST      case names containing any of these, comma-separated (core,http,express,...)
  --against DIR    also measure the Floodgate packages of another checkout, run by run
  --alloc          also bytes allocated per decision (V8's sampling heap profiler, in a pass
                   of its own after each case's timed samples)
  --json FILE      write the results there too
  --help`;

export interface MicroSide {
  label: string;
  /** The dist directory holding this side's micro-worker.js and Floodgate packages. */
  dir: string;
}

function runWorker(dir: string, job: MicroJob): MicroResult[] {
  const out = execFileSync(process.execPath, ['--expose-gc', join(dir, 'micro-worker.js'), JSON.stringify(job)], {
    cwd: BENCH_DIR,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 16 * 1024 * 1024,
  });
  return JSON.parse(out.trim().split('\n').pop() ?? '[]') as MicroResult[];
}

/** Builds another checkout's Floodgate packages with this bench's micro worker: the side to compare with. */
export async function againstSide(against: string): Promise<MicroSide> {
  const { outDir } = await buildAgainst(against, ['micro-worker']);
  return { label: `against ${against}`, dir: outDir };
}

/** Every case on every side, `rounds` times, alternating which side goes first; medians over rounds. */
export function runMicro(sides: readonly MicroSide[], job: MicroJob, rounds: number, onRound?: (text: string) => void): MicroRun {
  const all = new Map<string, Map<string, number[]>>(); // side -> case -> µs per round
  const bytes = new Map<string, Map<string, number[]>>(); // side -> case -> bytes per decision per round (--alloc)
  const answers = new Map<string, string>();
  for (let round = 0; round < rounds; round++) {
    // Alternate which checkout goes first, so drift hits both alike.
    const order = round % 2 === 0 ? sides : [...sides].reverse();
    for (const side of order) {
      for (const r of runWorker(side.dir, job)) {
        let byCase = all.get(side.label);
        if (!byCase) all.set(side.label, (byCase = new Map()));
        byCase.set(r.name, [...(byCase.get(r.name) ?? []), r.us]);
        if (r.bytes !== undefined) {
          let sideBytes = bytes.get(side.label);
          if (!sideBytes) bytes.set(side.label, (sideBytes = new Map()));
          sideBytes.set(r.name, [...(sideBytes.get(r.name) ?? []), r.bytes]);
        }
        answers.set(r.name, r.answered);
      }
      onRound?.(`round ${round + 1}/${rounds}: ${side.label} done`);
    }
  }
  const names = [...(all.get(sides[sides.length - 1].label)?.keys() ?? [])];
  return {
    job,
    rounds,
    sides: sides.map((s) => s.label),
    rows: names.map((name) => ({
      name,
      us: sides.map((s) => {
        const xs = all.get(s.label)?.get(name);
        return xs ? median(xs) : NaN;
      }),
      ...(job.alloc
        ? {
            bytes: sides.map((s) => {
              const xs = bytes.get(s.label)?.get(name);
              return xs ? median(xs) : NaN;
            }),
          }
        : {}),
      answered: answers.get(name) ?? '',
    })),
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      ops: { type: 'string' },
      samples: { type: 'string' },
      rounds: { type: 'string' },
      only: { type: 'string' },
      against: { type: 'string' },
      json: { type: 'string' },
      alloc: { type: 'boolean' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) {
    console.log(HELP);
    return;
  }
  const job: MicroJob = {
    ops: Number(values.ops ?? 20_000),
    samples: Number(values.samples ?? 7),
    only: values.only ? values.only.split(',').map((s) => s.trim()) : [],
    ...(values.alloc ? { alloc: true } : {}),
  };
  const rounds = Number(values.rounds ?? 3);
  await buildChildren({ children: ['micro-worker'] });
  const sides: MicroSide[] = [{ label: 'this checkout', dir: OUT_DIR }];
  if (values.against) sides.unshift(await againstSide(values.against));
  const m = machine();
  console.log(`${m.cpu}, ${m.cores} cores, Node ${m.node}; load average ${loadAverage().join(' ')} at start; ${job.ops} ops x ${job.samples} samples x ${rounds} rounds`);
  const run = runMicro(sides, job, rounds, (text) => process.stderr.write(`${text}\n`));
  console.log(microTable(run));
  if (job.alloc) console.log(`\n${allocTable(run)}`);
  console.log('\nWhat one operation answered (last run):');
  for (const row of run.rows) console.log(`  ${row.name}: ${row.answered}`);
  if (values.json) {
    writeFileSync(values.json, JSON.stringify({ machine: machine(), loadAverage: loadAverage(), ...run }, null, 2));
  }
}

if (require.main === module) {
  main().catch((error: Error) => {
    console.error(error.stack ?? error.message);
    process.exit(1);
  });
}
