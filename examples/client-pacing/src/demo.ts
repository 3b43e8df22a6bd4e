// The client-pacing example: a Floodgate-limited Express server, and one loop through pacedFetch beside one through plain fetch.
import type { AddressInfo } from 'node:net';
import express from 'express';
import { pacedFetch, type WaitEvent } from '@floodgate/client';
import { rateLimit } from '@floodgate/express';

export interface DemoLimit {
  /** Requests per window per client. */
  readonly limit: number;
  readonly windowMs: number;
}

export interface LoopSummary {
  readonly requests: number;
  /** Calls that came back 200: work done. */
  readonly done: number;
  /** 429s the client received (pacedFetch's retries included). */
  readonly tooMany: number;
  readonly ms: number;
}

/**
 * An Express app limited to `limit` per `windowMs` per client, sending draft-10 RateLimit fields
 * (Floodgate's memory store: the example needs no Redis). Resolves with its URL and a close().
 */
export async function startLimitedServer({ limit, windowMs }: DemoLimit): Promise<{ url: string; close: () => Promise<void> }> {
  const app = express();
  app.use(rateLimit({ limit, windowMs, headers: 'draft-10', algorithm: 'fixed-window' }));
  app.get('/work', (_req, res) => void res.json({ ok: true }));
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/work`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** `requests` calls one after another through pacedFetch, counting every response its fetch saw. */
export async function pacedLoop(url: string, requests: number, onWait?: (event: WaitEvent) => void): Promise<LoopSummary> {
  let tooMany = 0;
  const counting = async (input: string | URL | Request, init?: RequestInit) => {
    const response = await fetch(input, init);
    if (response.status === 429) tooMany++;
    return response;
  };
  const paced = pacedFetch(counting, { maxWaitMs: 30_000, onWait });
  let done = 0;
  const start = performance.now();
  for (let i = 0; i < requests; i++) {
    const response = await paced(url);
    await response.arrayBuffer();
    if (response.ok) done++;
  }
  return { requests, done, tooMany, ms: performance.now() - start };
}

/** The same calls through a plain fetch: sent at once, each 429 a call that did no work. */
export async function plainLoop(url: string, requests: number): Promise<LoopSummary> {
  let done = 0;
  let tooMany = 0;
  const start = performance.now();
  for (let i = 0; i < requests; i++) {
    const response = await fetch(url);
    await response.arrayBuffer();
    if (response.ok) done++;
    if (response.status === 429) tooMany++;
  }
  return { requests, done, tooMany, ms: performance.now() - start };
}

export function summaryLine(name: string, s: LoopSummary): string {
  return `${name}: ${s.done}/${s.requests} done, ${s.tooMany} x 429, ${(s.ms / 1000).toFixed(1)} s`;
}
