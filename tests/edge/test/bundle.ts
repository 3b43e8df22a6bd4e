// Bundles one of ./app's entries for an edge runtime with esbuild, the workspace packages taken from their TypeScript sources.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';

/** Bundles `entry` (a file under ../app) into one ES module in a temp dir; its path. `node:*` stays an import: each runtime has its own. */
export async function bundle(entry: string): Promise<string> {
  const outfile = join(mkdtempSync(join(tmpdir(), 'floodgate-edge-')), entry.replace(/\.ts$/, '.mjs'));
  await build({
    entryPoints: [join(__dirname, '..', 'app', entry)],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    // The workspace packages' `source` condition: their src/*.ts, as jest resolves them.
    conditions: ['source', 'worker', 'import'],
    mainFields: ['module', 'main'],
    external: ['node:*'],
    logLevel: 'silent',
  });
  return outfile;
}
