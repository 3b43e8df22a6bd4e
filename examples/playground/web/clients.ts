// The clients panel's two loops, run in the page: one through @floodgate/client's pacedFetch, one that retries a 429 at once.
import { pacedFetch } from '../../../packages/client/src/fetch';

export interface ClientStats {
  /** Requests that reached the server (every response the client's fetch saw). */
  sent: number;
  /** 429s it received. */
  tooMany: number;
  /** Calls that came back 2xx: the useful work. */
  done: number;
}

export type ClientName = 'well-behaved' | 'hot-loop';

/** The hot loop stops here whatever the time left: a bound on what one click can send. */
export const HOT_LOOP_MAX_REQUESTS = 3000;

const fresh = (): ClientStats => ({ sent: 0, tooMany: 0, done: 0 });

function headers(name: ClientName): Record<string, string> {
  return { 'x-playground-client': name };
}

/**
 * Calls `url` one after another until `signal` aborts, through pacedFetch: it waits before the
 * limit (the RateLimit fields) and so spends no request on a 429. `onUpdate` after every response.
 */
export async function wellBehaved(url: string, signal: AbortSignal, onUpdate: (s: ClientStats) => void): Promise<ClientStats> {
  const stats = fresh();
  const counting = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const response = await fetch(input, init);
    stats.sent++;
    if (response.status === 429) stats.tooMany++;
    return response;
  };
  const paced = pacedFetch(counting, { jitterMs: 100, maxWaitMs: Infinity });
  while (!signal.aborted) {
    try {
      const response = await paced(url, { signal, headers: headers('well-behaved') });
      await response.text();
      if (response.ok) stats.done++;
    } catch (error) {
      if (signal.aborted) break;
      throw error;
    }
    onUpdate(stats);
  }
  onUpdate(stats);
  return stats;
}

/**
 * Calls `url` as a client with no notion of the limit does: a 429 is tried again at once. Until
 * `signal` aborts or HOT_LOOP_MAX_REQUESTS went out.
 */
export async function hotLoop(url: string, signal: AbortSignal, onUpdate: (s: ClientStats) => void): Promise<ClientStats> {
  const stats = fresh();
  while (!signal.aborted && stats.sent < HOT_LOOP_MAX_REQUESTS) {
    let response: Response;
    try {
      response = await fetch(url, { signal, headers: headers('hot-loop') });
      await response.text();
    } catch (error) {
      if (signal.aborted) break;
      throw error;
    }
    stats.sent++;
    if (response.status === 429) stats.tooMany++;
    else if (response.ok) stats.done++;
    onUpdate(stats);
  }
  onUpdate(stats);
  return stats;
}
