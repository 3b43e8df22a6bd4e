#!/usr/bin/env node
// A sampled mutation run: applies each one-line mutant of scripts/mutants.json to a checkout's sources, runs the test files that should catch it, and says killed or survived.
//
//   node scripts/mutants.mjs [--tree DIR] [--only id,id] [--area A] [--json FILE] [--baseline] [--timeout S] [--list]
//
// --tree: the checkout to mutate (default: this one); run it on an older commit's worktree to compare
//   the suites of two commits against the same sample (`git worktree add --detach /tmp/old <commit>`,
//   `pnpm install --frozen-lockfile` there, then `node scripts/mutants.mjs --tree /tmp/old`).
// --baseline: first run every mutant's test set unmutated; a set that fails there is reported and its
//   mutants are skipped (a mutant is only "killed" by tests that pass without it).
// --list: where each mutant applies in the tree, without running anything.
//
// A mutant names the file by its name, or the names it has had (found under packages/*/src, the one holding `find` exactly
// once, so a file that moved between commits is still found) and its tests by path; test paths
// missing from the tree are skipped and listed. A mutant whose `find` is not in the tree is "n/a".
// The tree's files are restored after each mutant, and on Ctrl-C. Each mutant's tests run with
// `jest --bail` under a timeout (default 600 s): a run the timeout ends counts as killed, and is
// marked so (a mutant caught only by a hang is a weak kill).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

const here = resolve(new URL('..', import.meta.url).pathname);
const args = process.argv.slice(2);
const flag = (name) => args.includes(name);
const value = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1] : fallback;
};
const tree = resolve(value('--tree', here));
const only = value('--only', '')
  .split(',')
  .filter(Boolean);
const area = value('--area', '');
const jsonOut = value('--json', '');
const timeoutS = Number(value('--timeout', '600'));
if (!Number.isFinite(timeoutS) || timeoutS <= 0) throw new Error(`--timeout: expected seconds > 0, got ${value('--timeout')}`);

const sample = JSON.parse(readFileSync(join(here, 'scripts', 'mutants.json'), 'utf8'));
const mutants = sample.mutants.filter((m) => (only.length === 0 || only.includes(m.id)) && (!area || m.area === area));
if (mutants.length === 0) throw new Error('no mutant matches --only/--area');

/** Every file named `name` under the tree's packages/*\/src. */
function filesNamed(name) {
  const found = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir)) {
      if (entry === 'node_modules' || entry === 'dist') continue;
      const path = join(dir, entry);
      if (statSync(path).isDirectory()) walk(path);
      else if (entry === name) found.push(path);
    }
  };
  for (const pkg of readdirSync(join(tree, 'packages'))) {
    const src = join(tree, 'packages', pkg, 'src');
    if (existsSync(src)) walk(src);
  }
  return found;
}

/** The one file named m.file (a name, or the names it has had) holding m.find exactly once, or why there is none. */
function locate(m) {
  const names = [m.file].flat();
  const holders = names.flatMap(filesNamed).filter((f) => readFileSync(f, 'utf8').split(m.find).length === 2);
  if (holders.length === 1) return { path: holders[0] };
  return { why: holders.length === 0 ? `no ${names.join(' or ')} holds the line` : `${holders.length} files named ${names.join(' or ')} hold it` };
}

const testsIn = (m) => m.tests.filter((t) => existsSync(join(tree, t)));

const restores = new Map();
function restoreAll() {
  for (const [path, text] of restores) writeFileSync(path, text);
  restores.clear();
}
process.on('SIGINT', () => {
  restoreAll();
  process.exit(130);
});

/** Writes `text` into `path`, keeping the original for restoreAll. */
function write(path, text) {
  if (!restores.has(path)) restores.set(path, readFileSync(path, 'utf8'));
  writeFileSync(path, text);
}

/** A .lua chunk is compiled into the generated module: regenerate it after a change (its original is restored too). */
function regenerateLua() {
  const generated = join(tree, 'packages/core/src/lua/scripts.generated.ts');
  if (!restores.has(generated)) restores.set(generated, readFileSync(generated, 'utf8'));
  const r = spawnSync(process.execPath, ['scripts/gen-lua.mjs'], { cwd: tree, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`gen-lua failed: ${r.stderr}`);
}

/** Runs the test files; 'pass', 'fail' or 'timeout'. */
function runTests(files) {
  const r = spawnSync('pnpm', ['exec', 'jest', '--ci', '--bail=1', '--silent', ...files], {
    cwd: tree,
    encoding: 'utf8',
    timeout: timeoutS * 1000,
    killSignal: 'SIGKILL',
    env: { ...process.env, CI: '1', FORCE_COLOR: '0' },
  });
  if (r.error && r.error.code === 'ETIMEDOUT') return 'timeout';
  return r.status === 0 ? 'pass' : 'fail';
}

if (flag('--list')) {
  for (const m of mutants) {
    const at = locate(m);
    const tests = testsIn(m);
    const missing = m.tests.filter((t) => !tests.includes(t));
    console.log(`${m.id.padEnd(6)} ${at.path ? relative(tree, at.path) : `n/a: ${at.why}`} | tests ${tests.length}/${m.tests.length}${missing.length ? ` (missing: ${missing.join(', ')})` : ''}`);
  }
  process.exit(0);
}

const baselineBad = new Set();
if (flag('--baseline')) {
  const sets = new Map();
  for (const m of mutants) {
    const tests = testsIn(m);
    if (tests.length) sets.set(tests.join(' '), tests);
  }
  for (const [key, tests] of sets) {
    const outcome = runTests(tests);
    console.log(`baseline ${outcome}: ${key}`);
    if (outcome !== 'pass') baselineBad.add(key);
  }
}

const results = [];
for (const m of mutants) {
  const at = locate(m);
  const tests = testsIn(m);
  let outcome;
  if (!at.path) outcome = 'n/a';
  else if (tests.length === 0) outcome = 'no tests';
  else if (baselineBad.has(tests.join(' '))) outcome = 'baseline fails';
  else {
    const started = Date.now();
    try {
      write(at.path, readFileSync(at.path, 'utf8').replace(m.find, m.replace));
      if (at.path.endsWith('.lua')) regenerateLua();
      const run = runTests(tests);
      outcome = run === 'pass' ? 'survived' : run === 'timeout' ? 'killed (timeout)' : 'killed';
    } finally {
      restoreAll();
    }
    m.seconds = Math.round((Date.now() - started) / 1000);
  }
  results.push({ id: m.id, area: m.area, what: m.what, file: at.path ? relative(tree, at.path) : null, tests: tests.length, outcome, seconds: m.seconds ?? 0 });
  console.log(`${m.id.padEnd(6)} ${outcome.padEnd(16)} ${String(m.seconds ?? 0).padStart(4)} s  ${m.area}: ${m.what}`);
}

const killed = results.filter((r) => r.outcome.startsWith('killed')).length;
const survived = results.filter((r) => r.outcome === 'survived');
const counted = killed + survived.length;
console.log(`\n${relative(process.cwd(), tree) || '.'}: ${killed} of ${counted} killed (${results.filter((r) => r.outcome === 'killed (timeout)').length} by a timeout); ${results.length - counted} not run (n/a, no tests, baseline fails)`);
if (survived.length) console.log(`survived: ${survived.map((r) => r.id).join(', ')}`);
if (jsonOut) writeFileSync(jsonOut, JSON.stringify({ tree, results }, null, 2) + '\n');
