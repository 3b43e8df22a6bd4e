// Times test files one at a time (each in its own `jest` run): Jest's per-file duration, the slowest tests, and the load average.
// Usage: node scripts/time-files.mjs [--top N] [--runs N] <file.test.ts>... ; prints a table, exits non-zero if a file fails.
import { spawnSync } from 'node:child_process';
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';

const args = process.argv.slice(2);
const topAt = args.indexOf('--top');
const top = topAt >= 0 ? Number(args.splice(topAt, 2)[1]) : 5;
const runsAt = args.indexOf('--runs');
const runs = runsAt >= 0 ? Number(args.splice(runsAt, 2)[1]) : 1;
const files = args.filter((a) => !a.startsWith('--'));
if (files.length === 0) {
  console.error('usage: node scripts/time-files.mjs [--top N] [--runs N] <file.test.ts>...');
  process.exit(2);
}

const dir = mkdtempSync(join(tmpdir(), 'time-files-'));
const rows = [];
let failed = false;
for (const file of files.flatMap((f) => Array.from({ length: runs }, () => f))) {
  const out = join(dir, 'result.json');
  const load = loadavg()[0].toFixed(2);
  const run = spawnSync('pnpm', ['exec', 'jest', file, '--json', `--outputFile=${out}`], { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  let result;
  try {
    result = JSON.parse(readFileSync(out, 'utf8'));
  } catch {
    console.error(`${file}: no Jest result\n${run.stderr}`);
    failed = true;
    continue;
  }
  for (const suite of result.testResults) {
    const seconds = (suite.endTime - suite.startTime) / 1000;
    const tests = suite.assertionResults;
    const passed = tests.filter((t) => t.status === 'passed').length;
    if (suite.status !== 'passed') failed = true;
    rows.push({ file, seconds, tests: tests.length, passed, load });
    const slow = [...tests].sort((a, b) => (b.duration ?? 0) - (a.duration ?? 0)).slice(0, top);
    console.log(`${file}  ${seconds.toFixed(1)} s  ${passed}/${tests.length} passed  (load ${load})`);
    for (const t of slow) console.log(`    ${String(t.duration ?? '?').padStart(6)} ms  ${t.fullName}`);
    if (suite.status !== 'passed') console.log(suite.message);
  }
}
rmSync(dir, { recursive: true, force: true });
console.log('\nfile | s | tests | load(1m) at start');
for (const r of rows) console.log(`${r.file} | ${r.seconds.toFixed(1)} | ${r.passed}/${r.tests} | ${r.load}`);
console.log(`total | ${rows.reduce((s, r) => s + r.seconds, 0).toFixed(1)} |`);
process.exit(failed ? 1 : 0);
