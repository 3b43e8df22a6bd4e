// The dependency check that `pnpm test` runs first (scripts/check-deps.mjs): it passes on the tree, and fails on a planted cycle or an adapter reaching into core.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const SCRIPT = join(__dirname, '..', '..', '..', 'scripts', 'check-deps.mjs');

function check(root?: string): { ok: boolean; output: string } {
  try {
    return { ok: true, output: execFileSync('node', root ? [SCRIPT, root] : [SCRIPT], { encoding: 'utf8', stdio: 'pipe' }) };
  } catch (error) {
    const e = error as { stdout: string; stderr: string };
    return { ok: false, output: `${e.stdout}${e.stderr}` };
  }
}

function plant(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'fg-deps-'));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

const roots: string[] = [];
afterAll(() => roots.forEach((r) => rmSync(r, { recursive: true, force: true })));

it('passes on the packages as they are', () => {
  const result = check();
  expect(result).toEqual({ ok: true, output: expect.stringContaining('no import cycles') });
});

it('fails on a planted cycle, a type-only one included, naming its files', () => {
  const root = plant({
    'core/src/a.ts': "import { b } from './b';\nexport const a = () => b;\n",
    'core/src/b.ts': "import type { A } from './c';\nexport const b = 1;\n",
    'core/src/c.ts': "import { a } from './a';\nexport type A = ReturnType<typeof a>;\n",
    'core/src/d.ts': 'export const d = 1;\n',
  });
  roots.push(root);
  const result = check(root);
  expect(result.ok).toBe(false);
  expect(result.output).toContain('import cycle: core/src/a.ts <-> core/src/b.ts <-> core/src/c.ts');
  expect(result.output).not.toContain('d.ts');
});

it('fails on two folders that import each other, and on an adapter importing core internals', () => {
  const root = plant({
    'core/src/stores/s.ts': "import { t } from '../failure/t';\nexport const s = t;\n",
    'core/src/failure/t.ts': 'export const t = 1;\n',
    'core/src/failure/u.ts': "import { s } from '../stores/s';\nexport const u = s;\n",
    'express/src/index.ts': "import { x } from '@floodgate/core/internal';\nimport { y } from '../../core/src/failure/t';\nexport { x, y };\n",
  });
  roots.push(root);
  const result = check(root);
  expect(result.ok).toBe(false);
  expect(result.output).toContain('folder cycle: core/src/failure <-> core/src/stores');
  expect(result.output).toContain("express/src/index.ts imports @floodgate/core/internal: an adapter imports only @floodgate/core and @floodgate/core/http");
  expect(result.output).toContain('express/src/index.ts imports ../../core/src/failure/t');
  expect(result.output).not.toContain('import cycle');
});
