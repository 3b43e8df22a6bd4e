// Builds each workspace package at most once per Jest run, however many packaging files ask for it at once (they run in parallel workers and would otherwise rebuild, and clean, one another's dist/ while packing it).
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);
const ROOT = join(__dirname, '..', '..', '..');
/** How long a file waits for another worker's build (a cold declaration pass on 2 busy cores takes minutes). */
const WAIT_MS = 15 * 60_000;

/** When the parent process started (Linux /proc; '' elsewhere): with its pid, names it even after the pid is reused. */
function parentStart(): string {
  try {
    return readFileSync(`/proc/${process.ppid}/stat`, 'utf8').split(') ')[1].split(' ')[19];
  } catch {
    return '';
  }
}
/**
 * One folder per package per run: the Jest workers of one run share their parent process (Jest's
 * own), so it names the run. The worker that creates the folder builds; the others wait for its
 * verdict. (Run in band, the parent is whatever started Jest: pnpm, npx, a shell.)
 */
const RUN = `${process.ppid}-${parentStart()}`;
const claimOf = (pkg: string) => join(tmpdir(), `floodgate-build-${RUN}`, pkg);

function claim(pkg: string): boolean {
  mkdirSync(join(claimOf(pkg), '..'), { recursive: true });
  try {
    mkdirSync(claimOf(pkg));
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}

/** Waits for another worker's build of `pkg`: its 'done' file, or its 'failed' file (whose text is the error). */
async function verdictOf(pkg: string): Promise<void> {
  const done = join(claimOf(pkg), 'done');
  const failed = join(claimOf(pkg), 'failed');
  const until = Date.now() + WAIT_MS;
  for (;;) {
    if (existsSync(done)) return;
    if (existsSync(failed)) throw new Error(`another test file's build of @floodgate/${pkg} failed:\n${readFileSync(failed, 'utf8')}`);
    if (Date.now() > until) throw new Error(`no build of @floodgate/${pkg} finished within ${WAIT_MS / 60_000} min (claimed at ${claimOf(pkg)})`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/**
 * Builds the packages (`pnpm -r --filter ... run build`, one call for those this file claims) and
 * waits for those another file is building; resolves once every one has its dist/. Core is built (or
 * waited for) before the rest, whichever file asks first.
 */
export async function buildOnce(pkgs: readonly string[]): Promise<void> {
  // Core first, on its own: the other packages' declaration pass reads core's built .d.ts (tsup.base.ts),
  // and core's build cleans its dist/ first, so nothing that depends on it may build at the same time.
  if (pkgs.length !== 1 || pkgs[0] !== 'core') await buildOnce(['core']);
  const mine = pkgs.filter(claim);
  if (mine.length > 0) {
    try {
      await exec('pnpm', ['-r', ...mine.flatMap((pkg) => ['--filter', `@floodgate/${pkg}`]), 'run', 'build'], { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 });
      for (const pkg of mine) writeFileSync(join(claimOf(pkg), 'done'), '');
    } catch (error) {
      const e = error as Error & { stdout?: string; stderr?: string };
      const text = `${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`;
      for (const pkg of mine) writeFileSync(join(claimOf(pkg), 'failed'), text);
      throw new Error(`building ${mine.join(', ')} failed: ${text}`);
    }
  }
  for (const pkg of pkgs) if (!mine.includes(pkg)) await verdictOf(pkg);
}
