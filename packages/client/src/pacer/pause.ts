// A wait that ends at a time, or when its scope changes, or rejects when the caller's AbortSignal fires.
import type { ScopeState } from './scope-state';

/** The reason an aborted signal carries (fetch's AbortError when it gave none). */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

/**
 * Resolves after `ms` (Infinity: only on a change), or as soon as `scope` changes when `onChange` is
 * set; rejects with the signal's reason on abort. The timer keeps the process alive, as a request
 * in flight does.
 */
export function pause(ms: number, scope: ScopeState, onChange: boolean, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortReason(signal));
      return;
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    let unsubscribe: (() => void) | undefined;
    const done = () => {
      if (timer !== undefined) clearTimeout(timer);
      unsubscribe?.();
      signal?.removeEventListener('abort', aborted);
    };
    const aborted = () => {
      done();
      reject(abortReason(signal!));
    };
    if (Number.isFinite(ms)) {
      timer = setTimeout(() => {
        done();
        resolve();
      }, Math.max(0, Math.ceil(ms)));
    }
    if (onChange) {
      unsubscribe = scope.onChange(() => {
        done();
        resolve();
      });
    }
    signal?.addEventListener('abort', aborted, { once: true });
  });
}
