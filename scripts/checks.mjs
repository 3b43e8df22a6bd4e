#!/usr/bin/env node
// The static checks `pnpm test` runs before Jest (generated Lua up to date, import layers, every TypeScript project, lint), run side by side on the machine's cores; a failing one prints its output whole.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
/** A package's command-line entry (its manifest's `bin`), so this script runs with or without pnpm's PATH. */
function binOf(pkg, name = pkg) {
  const manifest = require.resolve(`${pkg}/package.json`);
  const { bin } = JSON.parse(readFileSync(manifest, 'utf8'));
  return join(dirname(manifest), typeof bin === 'string' ? bin : bin[name]);
}
// tsc7: TypeScript 7 (the native compiler, `typescript7` in the root manifest), which users install
// today beside 5.9: the folders' own tsconfigs are checked with it in a few seconds each (5.9 took
// 10-28 s of CPU each); the root project, every package's sources, keeps the pinned 5.9 as well.
const BINS = { node: undefined, tsc: binOf('typescript', 'tsc'), tsc7: binOf('typescript7', 'tsc'), eslint: binOf('eslint') };

/** Each check: a name and its command. Every tsconfig a package, example or test folder type-checks with is here. */
const CHECKS = [
  ['gen-lua', 'node', ['scripts/gen-lua.mjs', '--check']],
  ['check-deps', 'node', ['scripts/check-deps.mjs']],
  ['tsc root', 'tsc', ['-p', 'tsconfig.json', '--noEmit']],
  ['tsc7 nestjs', 'tsc7', ['-p', 'packages/nestjs/tsconfig.json', '--noEmit']],
  ['tsc7 nestjs-api', 'tsc7', ['-p', 'examples/nestjs-api/tsconfig.json', '--noEmit']],
  ['tsc7 bench', 'tsc7', ['-p', 'bench/tsconfig.json', '--noEmit']],
  ['tsc7 packaging', 'tsc7', ['-p', 'tests/packaging/tsconfig.json', '--noEmit']],
  ['tsc7 edge', 'tsc7', ['-p', 'tests/edge/tsconfig.json', '--noEmit']],
  ['tsc7 doc-snippets', 'tsc7', ['-p', 'tests/doc-snippets/tsconfig.json', '--noEmit']],
  ['tsc7 nest-ws', 'tsc7', ['-p', 'tests/nest-ws/tsconfig.json', '--noEmit']],
  ['tsc7 playground web', 'tsc7', ['-p', 'examples/playground/web/tsconfig.json', '--noEmit']],
  ['eslint', 'eslint', []],
];

/** Runs one check to its end: its exit code and everything it printed, in order. */
function run([name, command, args]) {
  const started = Date.now();
  return new Promise((resolve) => {
    const bin = BINS[command];
    const child = spawn(process.execPath, bin ? [bin, ...args] : args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('error', (error) => resolve({ name, code: 1, output: `${output}${error.message}\n`, ms: Date.now() - started }));
    child.on('close', (code) => resolve({ name, code: code ?? 1, output, ms: Date.now() - started }));
  });
}

const lanes = Math.max(1, Math.min(availableParallelism(), CHECKS.length));
const queue = [...CHECKS];
const results = [];
await Promise.all(
  Array.from({ length: lanes }, async () => {
    for (let check = queue.shift(); check; check = queue.shift()) results.push(await run(check));
  }),
);
const failed = results.filter((r) => r.code !== 0);
for (const r of results) if (r.name === 'check-deps' && r.code === 0) process.stdout.write(r.output);
for (const r of failed) process.stdout.write(`\n--- ${r.name} failed (exit ${r.code}) ---\n${r.output}`);
const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;
console.log(`checks: ${results.length - failed.length} of ${results.length} passed (${lanes} at a time; slowest: ${results.sort((a, b) => b.ms - a.ms).slice(0, 3).map((r) => `${r.name} ${seconds(r.ms)}`).join(', ')})`);
process.exit(failed.length > 0 ? 1 : 0);
