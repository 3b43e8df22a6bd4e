// The dependency check that `pnpm test` runs first (scripts/check-deps.mjs): it passes on the tree, and fails on a planted cycle, an upward import between core's floors, or an adapter reaching into core.
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
    'core/src/base/a.ts': "import { b } from './b';\nexport const a = () => b;\n",
    'core/src/base/b.ts': "import type { A } from './c';\nexport const b = 1;\n",
    'core/src/base/c.ts': "import { a } from './a';\nexport type A = ReturnType<typeof a>;\n",
    'core/src/base/d.ts': 'export const d = 1;\n',
  });
  roots.push(root);
  const result = check(root);
  expect(result.ok).toBe(false);
  expect(result.output).toContain('import cycle: core/src/base/a.ts <-> core/src/base/b.ts <-> core/src/base/c.ts');
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

it('fails on an import, value or type, that goes up a floor of core, and on a root file or folder on no floor', () => {
  const root = plant({
    'core/src/base/low.ts': "import { high } from '../engine/high';\nexport const low = high;\n",
    'core/src/model/shape.ts': "import type { High } from '../engine/high';\nexport type Shape = High;\n",
    'core/src/engine/high.ts': "import { b } from '../base/b';\nexport const high = b;\nexport type High = number;\n",
    'core/src/base/b.ts': 'export const b = 1;\n',
    'core/src/index.ts': "export { high } from './engine/high';\n",
    'core/src/loose.ts': 'export const loose = 1;\n',
    'core/src/attic/x.ts': 'export const x = 1;\n',
  });
  roots.push(root);
  const result = check(root);
  expect(result.ok).toBe(false);
  expect(result.output).toContain('core/src/base/low.ts imports core/src/engine/high.ts: base (floor 1) may import only its own floor and below, and engine is on floor 9');
  expect(result.output).toContain('core/src/model/shape.ts imports core/src/engine/high.ts: model (floor 4)');
  expect(result.output).toContain('move loose.ts into a floor');
  expect(result.output).toContain('core/src/attic sits on no floor');
  // Downward imports and the entries are fine.
  expect(result.output).not.toContain('core/src/engine/high.ts imports');
  expect(result.output).not.toContain('core/src/index.ts imports');
});
