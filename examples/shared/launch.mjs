// Starts a TypeScript entry point with tsx (workspace packages from source) and passes signals through, also when pnpm is killed.
//
// Why a launcher rather than `tsx src/main.ts` in package.json: on SIGTERM, `pnpm run` ends its
// shell and exits without signalling the script's own processes, which then run on, orphaned, with
// the redis-server they started. This launcher forwards SIGINT, SIGTERM and SIGHUP, and treats its
// parent's death as a SIGTERM (it polls its parent pid: no platform-specific API needed).
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const PARENT_POLL_MS = 200;

/**
 * Runs `entry` (relative to `dir`) with tsx resolved from `dir`'s dependencies, and exits with its
 * exit code. `name` prefixes the launcher's own messages.
 */
export function launchTsx({ dir, entry, args = [], name }) {
  let tsxCli;
  try {
    tsxCli = createRequire(join(dir, 'package.json')).resolve('tsx/cli');
  } catch {
    console.error(`${name}: tsx is not installed for ${dir}. Run \`pnpm install\` at the repository root first.`);
    process.exit(1);
  }
  // --conditions=source makes the workspace packages load from their TypeScript sources: no build step.
  const child = spawn(process.execPath, [tsxCli, '--conditions=source', entry, ...args], { cwd: dir, stdio: 'inherit' });

  const forward = (signal) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => forward(signal));

  const parent = process.ppid;
  const watch = setInterval(() => {
    if (process.ppid !== parent) {
      clearInterval(watch);
      forward('SIGTERM');
    }
  }, PARENT_POLL_MS);
  watch.unref();

  child.on('exit', (code, signal) => {
    process.exit(code ?? (signal ? 1 : 0));
  });
}

// `node ../shared/launch.mjs src/main.ts [args]` from an example's folder (its `pnpm start`).
if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const [entry, ...args] = process.argv.slice(2);
  if (!entry) {
    console.error('usage: node examples/shared/launch.mjs <entry.ts> [args...] (run from the example folder)');
    process.exit(2);
  }
  launchTsx({ dir: process.cwd(), entry, args, name: 'launch' });
}
