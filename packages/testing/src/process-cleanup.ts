// Kills every spawned redis-server and removes temp dirs when the Node process exits, even under jest.
import { rmSync } from 'node:fs';
import { runInThisContext } from 'node:vm';

type Cleanup = () => void;

interface Registry {
  cleanups: Set<Cleanup>;
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
    const created: Registry = { cleanups: new Set() };
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
