// Bundles one of ./app's entries for an edge runtime with esbuild, the workspace packages taken from their TypeScript sources.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build, type Metafile } from 'esbuild';

/** The entries that run on workerd: bundled as Wrangler does, and with no `node:` module (no `nodejs_compat` flag). */
export const WORKER_ENTRIES = ['worker.ts', 'fetch-worker.ts', 'do-worker.ts', 'redis-http-worker.ts'];

/** The bundle of `entry` and esbuild's account of its inputs. */
export async function bundleWithMeta(entry: string): Promise<{ file: string; metafile: Metafile }> {
  const outfile = join(mkdtempSync(join(tmpdir(), 'floodgate-edge-')), entry.replace(/\.ts$/, '.mjs'));
  const worker = WORKER_ENTRIES.includes(entry);
  const { metafile } = await build({
    entryPoints: [join(__dirname, '..', 'app', entry)],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    // The workspace packages' `source` condition: their src/*.ts, as jest resolves them. For workerd,
    // Wrangler's conditions (workerd, worker, browser): lru-cache's browser build, for one, has no
    // dynamic import('node:diagnostics_channel').
    conditions: ['source', ...(worker ? ['workerd', 'worker', 'browser'] : ['worker']), 'import'],
    mainFields: ['module', 'main'],
    // `node:*` stays an import: Bun and Deno have their own. A Worker gets none (worker-bundle.test.ts).
    external: ['node:*'],
    metafile: true,
    logLevel: 'silent',
  });
  return { file: outfile, metafile };
}

/** Bundles `entry` (a file under ../app) into one ES module in a temp dir; its path. */
export async function bundle(entry: string): Promise<string> {
  return (await bundleWithMeta(entry)).file;
}
