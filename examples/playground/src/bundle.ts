// Bundles the page's script (web/app.ts, with core's in-memory twins) for the browser with esbuild, refusing Node modules.
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import { build, type Plugin } from 'esbuild';

export const WEB_DIR = join(__dirname, '..', 'web');
export const ENTRY = join(WEB_DIR, 'app.ts');

const NODE_BUILTINS = new Set(builtinModules);

/**
 * Fails the build when anything reachable from the entry imports a Node built-in (core's keys.ts and
 * redis-store.ts use node:crypto), so a wrong import shows up as a build error naming the importer,
 * not as a page that breaks at run time.
 */
export const browserOnly: Plugin = {
  name: 'browser-only',
  setup(b) {
    b.onResolve({ filter: /^[a-z_:/]+$/ }, (args) => {
      const bare = args.path.replace(/^node:/, '');
      if (!args.path.startsWith('node:') && !NODE_BUILTINS.has(bare)) return undefined;
      return {
        errors: [
          {
            text: `Node module "${args.path}" imported by ${args.importer}: the playground bundle runs in the browser`,
          },
        ],
      };
    });
  },
};

/** Builds the bundle in memory and returns its JavaScript. Throws esbuild's error on failure. */
export async function bundleWeb(entry: string = ENTRY): Promise<string> {
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    format: 'iife',
    platform: 'browser',
    target: 'es2020',
    legalComments: 'none',
    logLevel: 'silent',
    plugins: [browserOnly],
  });
  return result.outputFiles[0].text;
}

// `pnpm build:web` writes the bundle to dist/ to inspect it; the server builds its own copy in memory.
if (require.main === module) {
  void (async () => {
    const { mkdirSync, writeFileSync } = await import('node:fs');
    const out = join(__dirname, '..', 'dist');
    mkdirSync(out, { recursive: true });
    const code = await bundleWeb();
    writeFileSync(join(out, 'app.js'), code);
    console.log(`wrote ${join(out, 'app.js')} (${code.length} bytes)`);
  })();
}
