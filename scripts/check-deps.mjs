#!/usr/bin/env node
// Dependency check for `pnpm test`: no import cycle inside the packages' sources, and no adapter reaching into core's files or internal entry.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

// Core and the private test packages are not adapters; every other package (express, fastify, koa,
// and any framework added later) is one, found by its folder: adding an adapter edits no list here.
const NOT_ADAPTERS = ['core', 'testing', 'adapter-suites'];
// What an adapter may import of core: the app author's entry and the adapter author's.
const ADAPTER_ENTRIES = ['@floodgate/core', '@floodgate/core/http'];

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
  return problems;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), '..', 'packages');
  const problems = checkDependencies(root);
  if (problems.length > 0) {
    for (const p of problems) console.error(`check-deps: ${p}`);
    process.exit(1);
  }
  console.log(`check-deps: no import cycles; adapters import only ${ADAPTER_ENTRIES.join(' and ')} (${root})`);
}
