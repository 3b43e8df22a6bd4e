// Extracts every TypeScript/JavaScript snippet of README.md, docs/*.md and packages/*/README.md into files tsc checks in one program.
//
//   node scripts/doc-snippets.mjs --out DIR    writes DIR/esm/*.ts, DIR/cjs/*.ts, DIR/tsconfig.json and DIR/snippets.json
//   node scripts/doc-snippets.mjs --runnable DIR  writes the snippets that run as a project (tests/packaging builds and runs it)
//   node scripts/doc-snippets.mjs --list       prints each snippet with how it is checked, and the counts
//
// A snippet is checked as written: a whole program (its own imports) as an ES module, and again as
// CommonJS unless it awaits at the top level (then ESM only, and its page must say so). A comment
// on the line before the fence changes that:
//   <!-- snippet: express -->       checked after the Express context (app, router, store, ... declared;
//                                   likewise fastify, koa, hono, core); names the snippet declares itself win
//   <!-- snippet: fragment -->      not checked (a shape, a before/after of another library); counted
//   <!-- snippet: run GET /path --> also run by tests/packaging against the packed tarballs and a real
//                                   Redis: a server on PORT that must answer GET /path until a 429;
//   <!-- snippet: run script -->    or a script that must exit 0 (REDIS_URL set)
// Context and run combine: <!-- snippet: koa run POST /login -->.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const ts = createRequire(import.meta.url)(join(ROOT, 'node_modules', 'typescript'));

const LANGS = new Set(['ts', 'typescript', 'js', 'javascript', 'mjs', 'cjs']);
const CONTEXTS = ['express', 'fastify', 'koa', 'hono', 'core'];

// What each context declares, one name a line: a line is left out when the snippet declares that name itself.
const COMMON = [
  ['Redis', "import { Redis } from 'ioredis';"],
  ['RedisStore', "import { RedisStore } from '@floodgate/core';"],
  ['MemoryStore', "import { MemoryStore } from '@floodgate/core';"],
  ['createLimiter', "import { createLimiter } from '@floodgate/core';"],
  ['createClient', "import { createClient } from 'redis';"],
  ['store', 'declare const store: import("@floodgate/core").Store;'],
  ['client', 'declare const client: import("ioredis").Redis;'],
  ['redis', 'declare const redis: import("ioredis").Redis;'],
  ['logger', 'declare const logger: { warn(...args: unknown[]): void; error(...args: unknown[]): void };'],
  ['pino', 'declare function pino(): import("@floodgate/core").Logger;'],
  ['metrics', 'declare const metrics: { gauge(name: string, value: number): void };'],
  ['db', 'declare const db: { apiKeys: { find(key: string): Promise<{ accountId: string; plan: string } | null> } };'],
  ['PLANS', 'declare const PLANS: Record<string, import("@floodgate/core").LimitOptions[]>;'],
];
const PRELUDES = {
  core: [...COMMON, ['limiter', 'declare const limiter: import("@floodgate/core").Limiter;']],
  express: [
    ['express', "import express from 'express';"],
    ['rateLimit', "import { rateLimit } from '@floodgate/express';"],
    ...COMMON,
    ['app', 'declare const app: express.Express;'],
    ['router', 'declare const router: express.Router;'],
    ['handler', 'declare const handler: express.RequestHandler;'],
    ...['login', 'exportHandler', 'checkout', 'weeklyReport'].map((name) => [name, `declare const ${name}: express.RequestHandler;`]),
    ['limiter', 'declare const limiter: import("@floodgate/express").RateLimitMiddleware;'],
  ],
  fastify: [
    ['Fastify', "import Fastify from 'fastify';"],
    ['FastifyHandler', "type FastifyHandler = (request: import('fastify').FastifyRequest, reply: import('fastify').FastifyReply) => Promise<unknown>;"],
    ['rateLimit', "import { rateLimit } from '@floodgate/fastify';"],
    ...COMMON,
    ['app', "declare const app: import('fastify').FastifyInstance;"],
    ['handler', 'declare const handler: FastifyHandler;'],
    ['login', 'declare const login: FastifyHandler;'],
  ],
  hono: [
    ['Hono', "import { Hono } from 'hono';"],
    ['rateLimit', "import { rateLimit } from '@floodgate/hono';"],
    ['getConnInfo', "import { getConnInfo } from '@hono/node-server/conninfo';"],
    ...COMMON,
    ['app', 'declare const app: Hono;'],
    ['limiter', 'declare const limiter: import("@floodgate/hono").RateLimitMiddleware;'],
    ...['h', 'handler'].map((name) => [name, `declare const ${name}: import('hono').Handler;`]),
  ],
  koa: [
    ['Koa', "import Koa from 'koa';"],
    ['Router', "import Router from '@koa/router';"],
    ['bodyParser', "import { bodyParser } from '@koa/bodyparser';"],
    ['rateLimit', "import { rateLimit } from '@floodgate/koa';"],
    ...COMMON,
    ['app', 'declare const app: Koa;'],
    ['router', 'declare const router: Router;'],
    ['limiter', 'declare const limiter: import("@floodgate/koa").RateLimitMiddleware;'],
    ...['handler', 'login', 'loginHandler', 'reset', 'search', 'product'].map((name) => [name, `declare const ${name}: Koa.Middleware;`]),
  ],
};

/** The pages whose snippets are checked, repository-relative. */
export function pages(root = ROOT) {
  const md = (dir) => (existsSync(join(root, dir)) ? readdirSync(join(root, dir)).filter((f) => f.endsWith('.md')).map((f) => join(dir, f)) : []);
  const packageReadmes = readdirSync(join(root, 'packages'))
    .map((dir) => join('packages', dir, 'README.md'))
    .filter((file) => existsSync(join(root, file)));
  return ['README.md', ...md('docs'), ...packageReadmes];
}

/** Every fenced code block of one page with its language, first line and the snippet marker before it. */
export function fences(text) {
  const lines = text.split('\n');
  const found = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```+\s*([\w-]*)/.exec(lines[i]);
    if (!open) continue;
    const indent = open[1].length;
    const body = [];
    let j = i + 1;
    while (j < lines.length && !/^\s*```+\s*$/.test(lines[j])) body.push(lines[j++].slice(indent));
    let k = i - 1;
    while (k >= 0 && lines[k].trim() === '') k--;
    const marker = k >= 0 ? /^\s*<!--\s*snippet:\s*(.*?)\s*-->\s*$/.exec(lines[k])?.[1] : undefined;
    found.push({ lang: open[2].toLowerCase(), line: i + 2, code: body.join('\n'), marker });
    i = j;
  }
  return found;
}

/** A marker's words: its context, whether it is a fragment, and how it runs. */
function parseMarker(marker, where) {
  const out = { context: undefined, fragment: false, run: undefined };
  if (marker === undefined) return out;
  const words = marker.split(/\s+/).filter(Boolean);
  for (let i = 0; i < words.length; i++) {
    const w = words[i];
    if (w === 'fragment') out.fragment = true;
    else if (CONTEXTS.includes(w)) out.context = w;
    else if (w === 'run') {
      const next = words[i + 1];
      if (next === 'script') {
        out.run = { kind: 'script' };
        i += 1;
      } else if (/^(GET|POST)$/.test(next ?? '') && words[i + 2]?.startsWith('/')) {
        out.run = { kind: 'server', method: next, path: words[i + 2] };
        i += 2;
      } else throw new Error(`${where}: "run" takes "script" or a method and a path, got "${marker}"`);
    } else throw new Error(`${where}: unknown snippet marker word "${w}" in "${marker}"`);
  }
  return out;
}

/** What a snippet declares at its top level (imports, const/let, functions, classes), and whether it awaits there. */
function shape(code) {
  const source = ts.createSourceFile('snippet.ts', code, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const names = new Set();
  let topLevelAwait = false;
  for (const statement of source.statements) {
    if (ts.isImportDeclaration(statement)) {
      const clause = statement.importClause;
      if (clause?.name) names.add(clause.name.text);
      const bindings = clause?.namedBindings;
      if (bindings && ts.isNamespaceImport(bindings)) names.add(bindings.name.text);
      if (bindings && ts.isNamedImports(bindings)) for (const e of bindings.elements) names.add(e.name.text);
    } else if (ts.isVariableStatement(statement)) {
      for (const d of statement.declarationList.declarations) if (ts.isIdentifier(d.name)) names.add(d.name.text);
    } else if ((ts.isFunctionDeclaration(statement) || ts.isClassDeclaration(statement) || ts.isInterfaceDeclaration(statement) || ts.isTypeAliasDeclaration(statement)) && statement.name) {
      names.add(statement.name.text);
    }
  }
  const visit = (node) => {
    if (topLevelAwait) return;
    if (ts.isFunctionLike(node) || ts.isClassLike(node)) return;
    if (ts.isAwaitExpression(node) || (ts.isForOfStatement(node) && node.awaitModifier)) {
      topLevelAwait = true;
      return;
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return { names, topLevelAwait };
}

/** Every snippet of every page, with how it is checked. */
export function extract(root = ROOT) {
  const snippets = [];
  for (const page of pages(root)) {
    const text = readFileSync(join(root, page), 'utf8');
    for (const fence of fences(text)) {
      if (!LANGS.has(fence.lang)) continue;
      const where = `${page}:${fence.line}`;
      const marker = parseMarker(fence.marker, where);
      const { names, topLevelAwait } = shape(fence.code);
      const id = `${page.replace(/[/.]/g, '_').replace(/_md$/, '')}_L${fence.line}`;
      snippets.push({ id, page, line: fence.line, lang: fence.lang, code: fence.code, ...marker, names: [...names], topLevelAwait });
    }
  }
  return snippets;
}

/** The file tsc reads for one snippet: its context's lines first (those it does not declare itself), then the snippet. */
function fileText(snippet) {
  const prelude = snippet.context ? PRELUDES[snippet.context].filter(([name]) => !snippet.names.includes(name)).map(([, line]) => line) : [];
  // One line for the prelude, so that a diagnostic's line minus 1 is its line in the fence.
  return `${prelude.join(' ')}\n${snippet.code}\nexport {};\n`;
}

/** Writes the checked snippets under `out` (emptied first): esm/ and cjs/ with their package types, one tsconfig over both. */
export function write(out, snippets = extract()) {
  rmSync(out, { recursive: true, force: true });
  for (const style of ['esm', 'cjs']) {
    mkdirSync(join(out, style), { recursive: true });
    writeFileSync(join(out, style, 'package.json'), `${JSON.stringify({ type: style === 'esm' ? 'module' : 'commonjs' })}\n`);
  }
  const files = [];
  for (const s of snippets) {
    if (s.fragment) continue;
    const styles = s.topLevelAwait ? ['esm'] : ['esm', 'cjs'];
    for (const style of styles) {
      const file = join(style, `${s.id}.ts`);
      writeFileSync(join(out, file), fileText(s));
      files.push({ file, id: s.id, style });
    }
  }
  // What a newcomer's tsconfig says: strict, nodenext (ESM or CommonJS by the nearest package.json).
  const tsconfig = {
    compilerOptions: {
      target: 'ES2022',
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      lib: ['ES2022'],
      types: ['node'],
      strict: true,
      esModuleInterop: true,
      skipLibCheck: true,
      noEmit: true,
      // Warm runs re-check only what changed (the sources of the workspace packages are most of the work).
      incremental: true,
      tsBuildInfoFile: '../.tsbuildinfo',
      // Inside this repository the workspace packages resolve to their sources; tests/packaging checks the packed types.
      customConditions: ['source'],
    },
    files: files.map((f) => f.file),
  };
  writeFileSync(join(out, 'tsconfig.json'), `${JSON.stringify(tsconfig, null, 2)}\n`);
  writeFileSync(join(out, 'snippets.json'), `${JSON.stringify({ snippets, files }, null, 2)}\n`);
  return { snippets, files };
}

/**
 * Writes the snippets that run (`run` marker) under `out` as a newcomer's ES module project would
 * hold them: one `<id>.ts` each, `package.json` with type module, a strict nodenext tsconfig that
 * emits to dist/, and runnable.json. tests/packaging compiles them against the packed packages.
 */
export function writeRunnable(out, snippets = extract()) {
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const runnable = snippets.filter((s) => s.run);
  for (const s of runnable) writeFileSync(join(out, `${s.id}.ts`), `${s.code}\n`);
  writeFileSync(join(out, 'package.json'), `${JSON.stringify({ type: 'module' })}\n`);
  const tsconfig = {
    compilerOptions: { target: 'es2022', module: 'nodenext', strict: true, skipLibCheck: true, types: ['node'], outDir: 'dist', noEmitOnError: true },
    files: runnable.map((s) => `${s.id}.ts`),
  };
  writeFileSync(join(out, 'tsconfig.json'), `${JSON.stringify(tsconfig, null, 2)}\n`);
  writeFileSync(join(out, 'runnable.json'), `${JSON.stringify(runnable.map(({ id, page, line, run }) => ({ id, page, line, run })), null, 2)}\n`);
  return runnable;
}

/** The counts a report gives. */
export function counts(snippets) {
  const checked = snippets.filter((s) => !s.fragment);
  return {
    extracted: snippets.length,
    checked: checked.length,
    esmOnly: checked.filter((s) => s.topLevelAwait).length,
    fragments: snippets.length - checked.length,
    run: snippets.filter((s) => s.run).length,
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const snippets = extract();
  if (args[0] === '--out' && args[1]) {
    write(args[1], snippets);
    console.log(JSON.stringify(counts(snippets)));
  } else if (args[0] === '--runnable' && args[1]) {
    console.log(JSON.stringify({ runnable: writeRunnable(args[1], snippets).length }));
  } else if (args[0] === '--list') {
    for (const s of snippets) {
      const how = s.fragment ? 'fragment (not checked)' : `${s.context ? `${s.context} context, ` : ''}${s.topLevelAwait ? 'ESM only (top-level await)' : 'ESM and CJS'}${s.run ? `, run (${s.run.kind === 'script' ? 'script' : `${s.run.method} ${s.run.path}`})` : ''}`;
      console.log(`${relative(ROOT, join(ROOT, s.page))}:${s.line}  ${how}`);
    }
    console.log(JSON.stringify(counts(snippets)));
  } else {
    console.error('usage: node scripts/doc-snippets.mjs --out DIR | --runnable DIR | --list');
    process.exit(2);
  }
}
