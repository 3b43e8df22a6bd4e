// Compiles the child processes and Floodgate's packages to plain JavaScript, as a release build would.
//
// Why not run them through tsx like the bench itself: tsx compiles with esbuild's keepNames, which
// wraps every function created at run time in a __name() call (Object.defineProperty per closure).
// Floodgate's hot path creates closures per request, so under tsx it pays a cost its published
// build (tsup: no keepNames) never does, while the peers run their published JavaScript. Here
// every @floodgate package becomes one file of its own (so CPU profiles can still tell core from
// adapter from harness), and every package the bench itself depends on stays external: the peers
// and frameworks run exactly as installed.
import { createRequire } from 'node:module';
import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { build, type Plugin } from 'esbuild';
import { BENCH_DIR, REPO_DIR } from './env';

export const OUT_DIR = join(BENCH_DIR, 'dist');
const FLOODGATE = ['core', 'express', 'fastify', 'koa', 'nestjs', 'hono'];
const fromBench = createRequire(join(BENCH_DIR, 'package.json'));

/** A package's entry files (`exports` of its package.json), those it has. */
const PACKAGE_ENTRIES = ['index', 'http', 'internal'];

/** Entry points of child processes, compiled to dist/<name>.js. */
const CHILDREN = ['server', 'core-worker', 'memory-worker', 'micro-worker', 'flood-worker'];

function resolvesFromBench(specifier: string): boolean {
  try {
    fromBench.resolve(specifier);
    return true;
  } catch {
    return false;
  }
}

function externals(self: string | undefined): Plugin {
  return {
    name: 'floodgate-bench-externals',
    setup(b) {
      b.onResolve({ filter: /^[^./]/ }, (args) => {
        // A package or one of its entries (@floodgate/core/http): the package's one compiled file.
        const own = /^@floodgate\/([a-z]+)(?:\/[a-z]+)?$/.exec(args.path);
        // A private helper package (@floodgate/testing: the micro worker's redis-server): bundled into the child.
        if (own && !FLOODGATE.includes(own[1])) return undefined;
        // Another Floodgate package: its own compiled file, so all importers share one instance.
        if (own && own[1] !== self) return { path: `./floodgate-${own[1]}.js`, external: true };
        if (own) return undefined;
        // Node built-ins, and whatever the bench installs (frameworks, peers, ioredis): as installed.
        if (args.path.startsWith('node:') || resolvesFromBench(args.path)) return { path: args.path, external: true };
        // A Floodgate package's private dependency (lru-cache, ipaddr.js, fastify-plugin): bundled.
        return undefined;
      });
    },
  };
}

const common = {
  bundle: true,
  platform: 'node' as const,
  format: 'cjs' as const,
  target: 'node20',
  keepNames: false,
  sourcemap: 'linked' as const,
  logLevel: 'warning' as const,
  tsconfig: join(BENCH_DIR, 'tsconfig.json'),
};

/**
 * Builds dist/: one file per Floodgate package that exists, and one per child entry. `repoDir`
 * and `outDir` build another checkout's packages (e.g. a worktree of an older commit) with this
 * bench's children, so one run can measure both (`pnpm bench:micro --against DIR`).
 */
export async function buildChildren(options: { repoDir?: string; outDir?: string; children?: readonly string[] } = {}): Promise<void> {
  const outDir = options.outDir ?? OUT_DIR;
  const repoDir = options.repoDir ?? REPO_DIR;
  mkdirSync(outDir, { recursive: true });
  for (const pkg of FLOODGATE) {
    const src = join(repoDir, 'packages', pkg, 'src');
    if (!existsSync(join(src, 'index.ts'))) continue;
    // Every entry the package has (core: index, http, internal) in its one file: one instance of its modules.
    const entries = PACKAGE_ENTRIES.filter((name) => existsSync(join(src, `${name}.ts`)));
    const stdin = { contents: entries.map((name) => `export * from './${name}';`).join('\n'), resolveDir: src, sourcefile: 'entries.ts', loader: 'ts' as const };
    // A package with a tsconfig of its own compiles under it: @floodgate/nestjs's legacy decorators.
    const own = join(repoDir, 'packages', pkg, 'tsconfig.json');
    const tsconfig = existsSync(own) ? own : common.tsconfig;
    await build({ ...common, tsconfig, stdin, outfile: join(outDir, `floodgate-${pkg}.js`), plugins: [externals(pkg)] });
  }
  for (const name of options.children ?? CHILDREN) {
    await build({ ...common, entryPoints: [join(BENCH_DIR, 'src', `${name}.ts`)], outfile: join(outDir, `${name}.js`), plugins: [externals(undefined)] });
  }
}

/** Where another checkout's build goes (`--against DIR`). */
export const AGAINST_DIR = join(BENCH_DIR, 'dist-against');

/**
 * Builds another checkout's Floodgate packages (e.g. a worktree of an older commit, after `pnpm
 * install`) with this bench's `children`, into dist-against/; returns its absolute path and that
 * directory. A relative path is taken from where the command was typed (pnpm runs in bench/).
 */
export async function buildAgainst(against: string, children: readonly string[]): Promise<{ repoDir: string; outDir: string }> {
  const repoDir = resolve(process.env.INIT_CWD ?? process.cwd(), against);
  if (!existsSync(join(repoDir, 'packages', 'core', 'src', 'index.ts'))) throw new Error(`${repoDir} is not a Floodgate checkout`);
  mkdirSync(AGAINST_DIR, { recursive: true });
  await buildChildren({ repoDir, outDir: AGAINST_DIR, children });
  return { repoDir, outDir: AGAINST_DIR };
}
