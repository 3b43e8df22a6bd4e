// The browser bundle: built from core's own sources by esbuild, with no Node module inside.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundleWeb } from '../src/bundle';

describe('bundleWeb', () => {
  it("bundles the page with core's memory store and twins", async () => {
    const code = await bundleWeb();
    // Names from core's sources (esbuild keeps them: no minification).
    expect(code).toContain('slidingWindowCounter'); // a twin, as the memory store runs it
    expect(code).toContain('resolveLimiterOptions');
    expect(code).toContain('FG_INVALID_OPTION');
    expect(code).not.toMatch(/require\(["']node:/);
  });

  it('refuses a module that imports node:crypto, naming the importer', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pg-bundle-'));
    try {
      const entry = join(dir, 'entry.ts');
      writeFileSync(join(dir, 'hashing.ts'), `import { createHash } from 'node:crypto';\nexport const digest = (s: string) => createHash('sha256').update(s).digest('hex');\n`);
      writeFileSync(entry, `import { digest } from './hashing';\nconsole.log(digest('a'));\n`);
      await expect(bundleWeb(entry)).rejects.toThrow(/Node module "node:crypto" imported by .*hashing\.ts/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("bundles core's keys.ts for the browser: core hashes without node:crypto since issue 48", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pg-bundle-'));
    try {
      const entry = join(dir, 'entry.ts');
      const keys = join(__dirname, '..', '..', '..', 'packages', 'core', 'src', 'base', 'keys.ts');
      writeFileSync(entry, `import { subjectKey } from ${JSON.stringify(keys.replace(/\.ts$/, ''))};\nconsole.log(subjectKey('a', 'b', 'c'));\n`);
      const code = await bundleWeb(entry);
      expect(code).toContain('subjectKey');
      expect(code).not.toMatch(/require\(["']node:/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
