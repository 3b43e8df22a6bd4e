// Kills every spawned redis-server and removes temp dirs when the Node process exits, even under jest.
import { readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runInThisContext } from 'node:vm';

type Cleanup = () => void;

interface Registry {
  cleanups: Set<Cleanup>;
  swept: boolean;
}

const REGISTRY_KEY = Symbol.for('@floodgate/testing/process-cleanup');

/**
 * The real `process` object. Jest hands test files a sandboxed copy whose `on('exit')` never fires,
 * so the handler is attached to the host process, found through the main VM context.
 */
function hostProcess(): NodeJS.Process {
  try {
    const real = runInThisContext('process') as NodeJS.Process | undefined;
    if (real && typeof real.on === 'function') return real;
  } catch {
    // fall through
  }
  return process;
}

function registry(): Registry {
  const host = hostProcess() as NodeJS.Process & { [REGISTRY_KEY]?: Registry };
  let found = host[REGISTRY_KEY];
  if (!found) {
    const created: Registry = { cleanups: new Set(), swept: false };
    found = created;
    host[REGISTRY_KEY] = created;
    // Registered once per OS process (the registry lives on the host process object).
    host.on('exit', () => {
      for (const cleanup of created.cleanups) {
        try {
          cleanup();
        } catch {
          // best effort at exit
        }
      }
      created.cleanups.clear();
    });
  }
  return found;
}

/** Runs `cleanup` synchronously at process exit unless unregistered first. Returns the unregister function. */
export function onProcessExit(cleanup: Cleanup): () => void {
  const { cleanups } = registry();
  cleanups.add(cleanup);
  return () => {
    cleanups.delete(cleanup);
  };
}

/** Synchronous recursive removal that never throws (for exit handlers and stop()). */
export function removeDirQuietly(dir: string): void {
  try {
    rmSync(dir, { recursive: true, force: true });
  } catch {
    // ignore
  }
}

/** Prefix of every temp dir this package creates under os.tmpdir(). */
export const TEMP_DIR_PREFIX = 'floodgate-redis-';
/** File inside each temp dir holding the pid of the Node process that created it. */
export const OWNER_FILE = 'owner.pid';

/** The pid used in OWNER_FILE (the host process, also under jest). */
export function ownerPid(): number {
  return hostProcess().pid;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Once per process: removes temp dirs left behind by Node processes that died without running their
 * exit handler (SIGKILL). Their redis-servers were already killed by the parent-death signal.
 */
export function sweepStaleTempDirs(): void {
  const reg = registry();
  if (reg.swept) return;
  reg.swept = true;
  let entries: string[];
  try {
    entries = readdirSync(tmpdir()).filter((name) => name.startsWith(TEMP_DIR_PREFIX));
  } catch {
    return;
  }
  for (const name of entries) {
    const dir = join(tmpdir(), name);
    try {
      const pid = Number(readFileSync(join(dir, OWNER_FILE), 'utf8'));
      if (Number.isInteger(pid) && pid > 0 && !isAlive(pid)) removeDirQuietly(dir);
    } catch {
      // no owner file (yet) or not ours: leave it
    }
  }
}
