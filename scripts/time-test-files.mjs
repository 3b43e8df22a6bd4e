// Times test files one at a time (each alone in its own `jest` run) and prints Jest's own duration per file, with the machine's load: the figures of a suite-speed change.
/*
 * Usage: node scripts/time-test-files.mjs <file.test.ts>... [--runs=N]
 * Each file runs alone (`pnpm exec jest --json <file>`), N times (default 1); the time printed is
 * Jest's per-file duration (endTime - startTime in --json), which leaves out Jest's start-up. The
 * load average (`os.loadavg()`) before each run is printed beside it, since a shared machine makes
 * the same file slower when it is busy. A failing file is reported as failing, with the start of each
 * failure; its time still counts.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';

const args = process.argv.slice(2);
const runs = Number(args.find((a) => a.startsWith('--runs='))?.slice(7) ?? 1);
const files = args.filter((a) => !a.startsWith('--'));
if (files.length === 0 || !(runs >= 1)) {
  console.error('usage: node scripts/time-test-files.mjs <file.test.ts>... [--runs=N]');
  process.exit(2);
}

/** One run of one file: its Jest duration in seconds, its test count and whether it passed. */
function timeOnce(file) {
  const out = join(tmpdir(), `time-test-files-${process.pid}.json`);
  spawnSync('pnpm', ['exec', 'jest', '--json', `--outputFile=${out}`, file], { stdio: 'ignore' });
  try {
    const result = JSON.parse(readFileSync(out, 'utf8')).testResults[0];
    const seconds = (result.endTime - result.startTime) / 1000;
    const failures = result.assertionResults.filter((a) => a.status === 'failed').map((a) => `${a.fullName}: ${a.failureMessages.join('\n').split('\n').slice(0, 16).join('\n')}`);
    if (result.message && failures.length === 0) failures.push(result.message.split('\n').slice(0, 12).join('\n'));
    return { seconds, tests: result.assertionResults.length, passed: result.status === 'passed', failures };
  } catch {
    return { seconds: NaN, tests: 0, passed: false, failures: ['no result (jest did not run the file)'] };
  } finally {
    rmSync(out, { force: true });
  }
}

let total = 0;
for (const file of files) {
  for (let i = 0; i < runs; i++) {
    const load = loadavg().map((l) => l.toFixed(2)).join(' ');
    const { seconds, tests, passed, failures } = timeOnce(file);
    total += seconds / runs;
    console.log(`${seconds.toFixed(1).padStart(6)} s  ${String(tests).padStart(4)} tests  ${passed ? 'pass' : 'FAIL'}  load ${load}  ${file}`);
    for (const failure of failures) console.log(`    ${failure.replaceAll('\n', '\n    ')}`);
  }
}
console.log(`${total.toFixed(1).padStart(6)} s  total (mean per file over ${runs} run${runs > 1 ? 's' : ''})`);
