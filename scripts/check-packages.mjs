// Builds the published packages (every package.json of packages/ that is not private: scripts/packages.mjs), then checks each as pnpm packs it: publint, and attw on that very tarball.
// `attw --pack .` packs with npm, which ignores publishConfig; the tarball pnpm publishes is the one to judge.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { publishedPackages, ROOT } from './packages.mjs';

const PACKAGES = publishedPackages().map((p) => p.dir);
const BIN = (name) => join(ROOT, 'node_modules', '.bin', name);

function run(cmd, args, cwd) {
  console.log(`\n$ ${[cmd, ...args].join(' ')}    (in ${cwd.slice(ROOT.length + 1) || '.'})`);
  const result = spawnSync(cmd, args, { cwd, stdio: 'inherit' });
  return result.status === 0;
}

if (!run('pnpm', ['run', 'build'], ROOT)) process.exit(1);

const tmp = mkdtempSync(join(tmpdir(), 'floodgate-check-'));
const failed = [];
try {
  for (const pkg of PACKAGES) {
    const dir = join(ROOT, 'packages', pkg);
    if (!run(BIN('publint'), ['--strict'], dir)) failed.push(`${pkg}: publint`);
    const out = join(tmp, pkg);
    if (!run('pnpm', ['pack', '--pack-destination', out], dir)) {
      failed.push(`${pkg}: pnpm pack`);
      continue;
    }
    const tarball = readdirSync(out).find((name) => name.endsWith('.tgz'));
    if (!run(BIN('attw'), [join(out, tarball)], dir)) failed.push(`${pkg}: attw`);
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}

if (failed.length) {
  console.error(`\ncheck:packages: FAILED: ${failed.join(', ')}`);
  process.exit(1);
}
console.log(`\ncheck:packages: publint and attw clean for ${PACKAGES.map((p) => `@floodgate/${p}`).join(', ')}`);
