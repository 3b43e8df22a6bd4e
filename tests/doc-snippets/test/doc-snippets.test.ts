// Every TypeScript snippet of the docs, type-checked as a newcomer's strict nodenext project would (ESM, and CommonJS): one tsc program.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);
const ROOT = join(__dirname, '..', '..', '..');
const OUT = join(__dirname, '..', '.generated');
const TSC = require.resolve('typescript/bin/tsc');

interface Snippet {
  id: string;
  page: string;
  line: number;
  code: string;
  context?: string;
  fragment: boolean;
  run?: { kind: 'script' } | { kind: 'server'; method: string; path: string };
  names: string[];
  topLevelAwait: boolean;
}

let snippets: Snippet[];
let files: { file: string; id: string; style: 'esm' | 'cjs' }[];
let counts: { extracted: number; checked: number; esmOnly: number; fragments: number; run: number };

beforeAll(async () => {
  const { stdout } = await exec(process.execPath, [join(ROOT, 'scripts', 'doc-snippets.mjs'), '--out', OUT], { cwd: ROOT });
  counts = JSON.parse(stdout.trim().split('\n').pop()!);
  ({ snippets, files } = JSON.parse(readFileSync(join(OUT, 'snippets.json'), 'utf8')));
}, 60_000);

afterAll(() => {
  if (counts) console.log(`doc snippets: ${JSON.stringify(counts)}`); // buffered: shown beside a failure
});

it('type-checks every snippet not marked a fragment, strict, as nodenext ESM and CommonJS (ESM only where it awaits at the top level)', async () => {
  let output = '';
  try {
    await exec(process.execPath, [TSC, '-p', join(OUT, 'tsconfig.json'), '--pretty', 'false'], { cwd: OUT, maxBuffer: 16 * 1024 * 1024 });
  } catch (error) {
    output = (error as { stdout?: string }).stdout ?? String(error);
  }
  // Each diagnostic at the page and line it comes from: the generated file's line 1 is the context prelude.
  const byFile = new Map(files.map((f) => [f.file, f]));
  const byId = new Map(snippets.map((s) => [s.id, s]));
  const problems = output
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const m = /^(esm|cjs)[/\\]([^(]+)\.ts\((\d+),(\d+)\): (.*)$/.exec(line);
      if (!m) return line;
      const snippet = byId.get(byFile.get(`${m[1]}/${m[2]}.ts`)?.id ?? m[2])!;
      return `${snippet.page}:${snippet.line + Number(m[3]) - 2}:${m[4]} (${m[1]}): ${m[5]}`;
    });
  expect(problems).toEqual([]);
  expect(files.length).toBe(counts.checked * 2 - counts.esmOnly);
}, 180_000);

it('the quickstart has one complete, runnable file per framework, after an install line that names everything it imports', () => {
  const page = readFileSync(join(ROOT, 'docs', 'quickstart.md'), 'utf8');
  for (const framework of ['express', 'fastify', 'koa']) {
    const file = snippets.find((s) => s.page === 'docs/quickstart.md' && s.run?.kind === 'server' && s.code.includes(`from '@floodgate/${framework}'`));
    expect({ framework, runnable: file !== undefined }).toEqual({ framework, runnable: true });
    // A whole program: no context prelude, every name it uses imported or declared by itself.
    expect(file!.context).toBeUndefined();
    const imported = [...file!.code.matchAll(/from '([^']+)'/g)].map((m) => m[1]).filter((spec) => !spec.startsWith('node:') && !spec.startsWith('.'));
    // The `npm install` line shown last before the file.
    const before = page.split('\n').slice(0, file!.line - 1).reverse();
    const install = before.find((line) => /^npm install (?!-D |--save-dev )/.test(line));
    expect({ framework, install: install !== undefined }).toEqual({ framework, install: true });
    const named = new Set(install!.replace(/#.*$/, '').split(/\s+/).slice(2).filter((w) => !w.startsWith('-')));
    for (const spec of imported) expect({ framework, spec, installed: named.has(spec) }).toEqual({ framework, spec, installed: true });
    // TypeScript and the types it needs come with the install too.
    const dev = before.find((line) => /^npm install (-D|--save-dev) /.test(line));
    expect({ framework, typescript: dev?.includes('typescript') ?? false }).toEqual({ framework, typescript: true });
  }
});

it('every snippet that runs is also type-checked, and names what it answers', () => {
  const running = snippets.filter((s) => s.run);
  expect(running.length).toBeGreaterThanOrEqual(3);
  for (const s of running) expect({ at: `${s.page}:${s.line}`, fragment: s.fragment }).toEqual({ at: `${s.page}:${s.line}`, fragment: false });
});
