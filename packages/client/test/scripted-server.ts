// A loopback HTTP server for the client's own tests: a small fixed-window limit, answers scripted per request.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Seen {
  readonly at: number;
  readonly method: string;
  readonly path: string;
  readonly status: number;
}

export interface ScriptedServer {
  readonly url: string;
  readonly seen: Seen[];
  /** Requests in flight right now, and the most ever seen at once. */
  inFlight: number;
  maxInFlight: number;
  close(): Promise<void>;
}

/** What the script answers: a status, headers, a body, and optionally a delay before answering. */
export interface Answer {
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  delayMs?: number;
}

export type Script = (req: IncomingMessage, n: number) => Answer;

export async function startScripted(script: Script): Promise<ScriptedServer> {
  let n = 0;
  const state = { inFlight: 0, maxInFlight: 0 };
  const seen: Seen[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const at = performance.now();
    state.inFlight++;
    state.maxInFlight = Math.max(state.maxInFlight, state.inFlight);
    const answer = script(req, n++);
    const status = answer.status ?? 200;
    seen.push({ at, method: req.method ?? 'GET', path: req.url ?? '/', status });
    req.resume();
    const send = () => {
      state.inFlight--;
      res.writeHead(status, answer.headers ?? {});
      res.end(answer.body ?? '');
    };
    if (answer.delayMs) setTimeout(send, answer.delayMs);
    else send();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    get inFlight() {
      return state.inFlight;
    },
    get maxInFlight() {
      return state.maxInFlight;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  } as ScriptedServer;
}

/**
 * A fixed window of `limit` per `windowMs`, starting at the first request, answering with
 * `headers(remaining, resetMs)` and 429 + Retry-After once spent. `opened` is when each window began.
 */
export function fixedWindow(limit: number, windowMs: number, headers: (remaining: number, resetMs: number) => Record<string, string>) {
  let start = -Infinity;
  let used = 0;
  const windows: number[] = [];
  const script: Script = () => {
    const t = performance.now();
    if (t >= start + windowMs) {
      start = t;
      used = 0;
      windows.push(t);
    }
    const resetMs = start + windowMs - t;
    if (used >= limit) {
      return { status: 429, headers: { ...headers(0, resetMs), 'retry-after': String(Math.ceil(resetMs / 1000)) } };
    }
    used++;
    return { status: 200, headers: headers(limit - used, resetMs), body: 'ok' };
  };
  return { script, windows };
}

export const draft6 = (limit: number) => (remaining: number, resetMs: number) => ({
  'ratelimit-limit': String(limit),
  'ratelimit-remaining': String(remaining),
  'ratelimit-reset': String(Math.ceil(resetMs / 1000)),
});
