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

  it('refuses a module that imports node:crypto (core keys.ts), naming the importer', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pg-bundle-'));
    try {
      const entry = join(dir, 'entry.ts');
      const keys = join(__dirname, '..', '..', '..', 'packages', 'core', 'src', 'base', 'keys.ts');
      writeFileSync(entry, `import { subjectKey } from ${JSON.stringify(keys.replace(/\.ts$/, ''))};\nconsole.log(subjectKey('a', 'b', 'c'));\n`);
      await expect(bundleWeb(entry)).rejects.toThrow(/Node module "node:crypto" imported by .*keys\.ts/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
