#!/usr/bin/env node
// Dependency check for `pnpm test`: no import cycle inside the packages' sources, core's layers imported only downward, and no adapter reaching into core's files or internal entry.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

// Core and the private test packages are not adapters; every other package (express, fastify, koa,
// and any framework added later) is one, found by its folder: adding an adapter edits no list here.
const NOT_ADAPTERS = ['core', 'testing', 'adapter-suites'];
// What an adapter may import of core: the app author's entry and the adapter author's.
const ADAPTER_ENTRIES = ['@floodgate/core', '@floodgate/core/http'];

// Core's floors, bottom first: the one place the layer order is written (docs/architecture.md
// explains each). A file of core/src may import (values or types) from its own floor and the floors
// below, never from a floor above; folders on one floor must not import each other both ways (the
// folder-cycle check below). Every folder of core/src sits on a floor; the root holds the public
// entries only (the top floor).
export const CORE_LAYERS = [
  ['lua'], // the generated Lua module
  ['base'], // errors, validation, durations, deadlines, keys, logging: no project types
  ['algorithms'], // each algorithm's twin and script, the registry
  ['calendar'], // calendar windows and zoned time
  ['model'], // limits, decisions, usage, settle, lockout, the concurrency option
  ['observe', 'headers'], // metrics, health and the states they report; the header dialects
  ['stores'], // the store contract, the memory store, the Redis store
  ['hot-keys'], // hot-key mode over a store
  ['failure'], // breaker, store runtime, fleet, the failure modes
  ['engine'], // options, the limiter, block cache, lease book, the link to the store runtime
  ['shedding', 'identity'], // load shedding and fleets of limiters; who the request is
  ['http'], // the framework-free HTTP pipeline
];
const CORE_ENTRIES = ['index.ts', 'http.ts', 'internal.ts'];
const ENTRY_FLOOR = CORE_LAYERS.length;

function sourceFiles(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...sourceFiles(path));
    else if (/\.ts$/.test(name) && !/\.(test|test-d)\.ts$/.test(name) && !name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

/** The file a relative specifier names (`./x` -> x.ts or x/index.ts), or undefined. */
function resolveRelative(from, specifier) {
  const base = resolve(dirname(from), specifier);
  for (const candidate of [`${base}.ts`, join(base, 'index.ts'), base.replace(/\.js$/, '.ts')]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
  }
  return undefined;
}

/** Every import and re-export (type-only ones too: a type cycle is still a knot to read). */
function importsOf(file) {
  return ts.preProcessFile(readFileSync(file, 'utf8'), true, true).importedFiles.map((f) => f.fileName);
}

/** Strongly connected components of more than one file (or a file importing itself): the cycles. */
function cycles(graph) {
  let index = 0;
  const stack = [];
  const on = new Set();
  const meta = new Map();
  const found = [];
  const visit = (v) => {
    meta.set(v, { index, low: index });
    index++;
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!meta.has(w)) {
        visit(w);
        meta.get(v).low = Math.min(meta.get(v).low, meta.get(w).low);
      } else if (on.has(w)) {
        meta.get(v).low = Math.min(meta.get(v).low, meta.get(w).index);
      }
    }
    if (meta.get(v).low === meta.get(v).index) {
      const component = [];
      let w;
      do {
        w = stack.pop();
        on.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!meta.has(v)) visit(v);
  return found;
}

/** The floor of a file of core/src (its first folder's floor; the root's entries on top), or a problem. */
function floorOf(coreSrc, file) {
  const parts = relative(coreSrc, file).split(/[\\/]/);
  if (parts.length === 1) return CORE_ENTRIES.includes(parts[0]) ? { floor: ENTRY_FLOOR, room: '(entries)' } : { problem: `the root of core/src holds only the public entries (${CORE_ENTRIES.join(', ')}): move ${parts[0]} into a floor's folder` };
  const floor = CORE_LAYERS.findIndex((rooms) => rooms.includes(parts[0]));
  return floor < 0 ? { problem: `core/src/${parts[0]} sits on no floor: add it to CORE_LAYERS in scripts/check-deps.mjs` } : { floor, room: parts[0] };
}

/** Core's imports that go up a floor, and files or folders of core/src on no floor. */
function layerProblems(root, graph) {
  const coreSrc = join(root, 'core', 'src');
  const problems = new Set();
  for (const [file, edges] of graph) {
    if (!file.startsWith(coreSrc)) continue;
    const from = floorOf(coreSrc, file);
    if (from.problem) {
      problems.add(from.problem);
      continue;
    }
    for (const target of edges) {
      if (!target.startsWith(coreSrc)) continue;
      const to = floorOf(coreSrc, target);
      if (to.floor > from.floor) problems.add(`${relative(root, file)} imports ${relative(root, target)}: ${from.room} (floor ${from.floor}) may import only its own floor and below, and ${to.room} is on floor ${to.floor}`);
    }
  }
  return [...problems];
}

/**
 * Checks the packages under `root` (a folder holding one folder per package, each with src/).
 * Returns the problems found, as lines; none means the check passes.
 */
export function checkDependencies(root) {
  const problems = [];
  const graph = new Map();
  for (const pkg of readdirSync(root)) {
    const src = join(root, pkg, 'src');
    if (!existsSync(src)) continue;
    const isAdapter = !NOT_ADAPTERS.includes(pkg);
    for (const file of sourceFiles(src)) {
      const edges = [];
      for (const specifier of importsOf(file)) {
        if (specifier.startsWith('.')) {
          const target = resolveRelative(file, specifier);
          if (target) edges.push(target);
          if (isAdapter && target && !target.startsWith(src)) {
            problems.push(`${relative(root, file)} imports ${specifier}: an adapter imports only core's entries, never another package's files`);
          }
        } else if (isAdapter && specifier.startsWith('@floodgate/core/') && !ADAPTER_ENTRIES.includes(specifier)) {
          problems.push(`${relative(root, file)} imports ${specifier}: an adapter imports only ${ADAPTER_ENTRIES.join(' and ')}, never core's internals`);
        }
      }
      graph.set(file, edges);
    }
  }
  for (const component of cycles(graph)) {
    problems.push(`import cycle: ${component.map((f) => relative(root, f)).join(' <-> ')}`);
  }
  // Folders inside one package's src (core/src/stores, core/src/failure) must not import each other
  // both ways either: each folder is one idea, and a two-way knot means one belongs in the other.
  const folderOf = (file) => {
    const parts = relative(root, file).split(/[\\/]/);
    return parts.length > 3 ? parts.slice(0, 3).join('/') : undefined; // pkg/src/<folder>/...
  };
  const folders = new Map();
  for (const [file, edges] of graph) {
    const from = folderOf(file);
    if (!from) continue;
    if (!folders.has(from)) folders.set(from, []);
    for (const target of edges) {
      const to = folderOf(target);
      if (to && to !== from && !folders.get(from).includes(to)) folders.get(from).push(to);
    }
  }
  for (const component of cycles(folders)) problems.push(`folder cycle: ${component.join(' <-> ')}`);
  problems.push(...layerProblems(root, graph));
  return problems;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), '..', 'packages');
  const problems = checkDependencies(root);
  if (problems.length > 0) {
    for (const p of problems) console.error(`check-deps: ${p}`);
    process.exit(1);
  }
  console.log(`check-deps: no import cycles; core's ${CORE_LAYERS.length} floors imported only downward; adapters import only ${ADAPTER_ENTRIES.join(' and ')} (${root})`);
}
