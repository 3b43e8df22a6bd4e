// Bounded polling helper: retry an async check at a short interval until it passes or a deadline expires.

export interface PollOptions {
  /** Give up after this many milliseconds. */
  timeoutMs: number;
  /** Pause between attempts. Default 20 ms. */
  intervalMs?: number;
  /** Used in the timeout error message. */
  what: string;
}

const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Calls `check` until it returns a value other than `undefined` and returns that value. A throwing
 * check counts as "not yet"; its last error is reported if the deadline passes.
 */
export async function pollUntil<T>(
  check: () => Promise<T | undefined>,
  options: PollOptions,
): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  const interval = options.intervalMs ?? 20;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline) {
      const detail = lastError instanceof Error ? `: ${lastError.message}` : '';
      throw new Error(`Timed out after ${options.timeoutMs} ms waiting for ${options.what}${detail}`);
    }
    await delay(interval);
  }
}
