// The client loop: N requests against a limit, with @floodgate/client's pacedFetch and with a plain fetch, counting 429s.
import { pacedFetch, type PacingOptions } from '@floodgate/client';

export interface LoopResult {
  /** Requests the loop wanted done. */
  readonly requests: number;
  /** Requests that came back 2xx (useful work). */
  readonly ok: number;
  /** 429 responses the client received, retries included. */
  readonly tooMany: number;
  /** Every response the client received (requests the server saw). */
  readonly sent: number;
  /** Calls that ended in an error instead of a response. */
  readonly errors: number;
  readonly ms: number;
}

/** The fastest a loop of `requests` can finish under `limit` per `windowMs`: the last batch starts after (batches - 1) windows. */
export function fastestMs(requests: number, limit: number, windowMs: number): number {
  return (Math.ceil(requests / limit) - 1) * windowMs;
}

/** `requests` calls one after another through pacedFetch; every response the wrapped fetch sees is counted. */
export async function pacedLoop(url: string, requests: number, options: PacingOptions = {}): Promise<LoopResult> {
  let tooMany = 0;
  let sent = 0;
  const counting = async (input: string | URL | Request, init?: RequestInit) => {
    const response = await fetch(input, init);
    sent++;
    if (response.status === 429) tooMany++;
    return response;
  };
  const paced = pacedFetch(counting, options);
  let ok = 0;
  let errors = 0;
  const start = performance.now();
  for (let i = 0; i < requests; i++) {
    try {
      const response = await paced(url);
      await response.arrayBuffer();
      if (response.ok) ok++;
    } catch {
      errors++;
    }
  }
  return { requests, ok, tooMany, sent, errors, ms: performance.now() - start };
}

/** The same loop with a plain fetch: each call sent at once, a 429 is a call that did no work. */
export async function plainLoop(url: string, requests: number): Promise<LoopResult> {
  let ok = 0;
  let tooMany = 0;
  let errors = 0;
  const start = performance.now();
  for (let i = 0; i < requests; i++) {
    try {
      const response = await fetch(url);
      await response.arrayBuffer();
      if (response.ok) ok++;
      if (response.status === 429) tooMany++;
    } catch {
      errors++;
    }
  }
  return { requests, ok, tooMany, sent: requests - errors, errors, ms: performance.now() - start };
}

/**
 * The floor: `requests` calls one after another, each retried `retryDelayMs` after every 429 until it
 * is taken, so the loop is admitted at the first moment the server takes a request (within that
 * delay). No client that waits for its quota can finish sooner against the same server; its 429s are
 * the price of finding the moment by asking. Not a way to call an API: a reference for the paced time.
 */
export async function hotRetryLoop(url: string, requests: number, retryDelayMs = 5): Promise<LoopResult> {
  let ok = 0;
  let tooMany = 0;
  let sent = 0;
  let errors = 0;
  const start = performance.now();
  for (let i = 0; i < requests; i++) {
    for (;;) {
      try {
        const response = await fetch(url);
        await response.arrayBuffer();
        sent++;
        if (response.ok) {
          ok++;
          break;
        }
        if (response.status !== 429) break;
        tooMany++;
      } catch {
        errors++;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, retryDelayMs));
    }
  }
  return { requests, ok, tooMany, sent, errors, ms: performance.now() - start };
}
