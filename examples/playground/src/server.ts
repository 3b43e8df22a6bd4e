// The playground's HTTP server: the page and its bundle, the live adapter routes, the clients, in-flight, override and shedding routes by path prefix, and the race API.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { WEB_DIR, bundleWeb } from './bundle';
import { CLIENTS_LIMIT, CLIENTS_LOCKOUT, CLIENTS_PATH, createClientsApp } from './clients';
import { INFLIGHT_HOLD_MS, INFLIGHT_LIMIT, INFLIGHT_PATH, INFLIGHT_STATE_PATH, createInflightApp } from './inflight';
import { LIVE_ROUTES, createLiveApps, describeLiveLimit } from './live';
import { OVERRIDE_LIMIT, OVERRIDE_PATH, OVERRIDE_PREFIX, OVERRIDE_ROUTE, OVERRIDE_TTL_MS, createOverrideApp } from './override';
import { RACE_COMMAND, RACE_HINT, createRace } from './race';
import { MAX_WORK_MS, PRIORITIES, SHED_PREFIX, SHED_STATE_PATH, SHEDDING_OPTIONS, createSheddingApp } from './shedding';

export interface PlaygroundOptions {
  /** TCP port; 0 picks a free one. Default 3000. */
  port?: number;
  /** Interface to bind. Default '127.0.0.1': the playground is for this machine only. */
  host?: string;
  /** Redis for the race panel, e.g. 'redis://127.0.0.1:6390'. Default: none (the panel says how to enable it). */
  redisUrl?: string;
  /** Where warnings go. Default console.error. */
  log?: (line: string) => void;
}

export interface Playground {
  /** http://127.0.0.1:PORT/ */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 16 * 1024;

function send(res: ServerResponse, status: number, type: string, body: string | Buffer): void {
  res.writeHead(status, {
    'content-type': type,
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
  });
  res.end(body);
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  send(res, status, 'application/json; charset=utf-8', JSON.stringify(value));
}

function readJson(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new RangeError('request body too large'));
        req.destroy();
      } else chunks.push(chunk);
    });
    req.on('end', () => {
      try {
        resolve(chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {});
      } catch {
        reject(new RangeError('request body is not JSON'));
      }
    });
    req.on('error', reject);
  });
}

/** Builds the page's bundle, the three framework apps and the race, then listens. */
export async function startPlayground(options: PlaygroundOptions = {}): Promise<Playground> {
  const host = options.host ?? '127.0.0.1';
  const port = options.port ?? 3000;
  const log = options.log ?? ((line: string) => console.error(line));
  // Built on every start, so a fresh clone needs no separate build step and never serves a stale bundle.
  const [script, html, css] = await Promise.all([
    bundleWeb(),
    readFile(join(WEB_DIR, 'index.html')),
    readFile(join(WEB_DIR, 'style.css')),
  ]);
  const live = await createLiveApps();
  const clients = createClientsApp();
  const inflight = createInflightApp();
  const override = createOverrideApp();
  const shedding = createSheddingApp();
  const race = createRace(options.redisUrl, log);
  const info = {
    live: LIVE_ROUTES.map(({ framework, title, path, usage }) => ({ framework, title, path, usage })),
    liveLimit: describeLiveLimit(),
    race: { enabled: race.enabled, target: race.target, hint: RACE_HINT, command: RACE_COMMAND },
    clients: { path: CLIENTS_PATH, ...CLIENTS_LIMIT, lockout: CLIENTS_LOCKOUT },
    inflight: { path: INFLIGHT_PATH, statePath: INFLIGHT_STATE_PATH, ...INFLIGHT_LIMIT, holdMs: INFLIGHT_HOLD_MS },
    override: { prefix: OVERRIDE_PREFIX, path: OVERRIDE_PATH, route: OVERRIDE_ROUTE, ...OVERRIDE_LIMIT, ttlMs: OVERRIDE_TTL_MS },
    shedding: { prefix: SHED_PREFIX, statePath: SHED_STATE_PATH, priorities: PRIORITIES, options: SHEDDING_OPTIONS, maxWorkMs: MAX_WORK_MS },
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    const method = req.method ?? 'GET';
    const app = live.handlerFor(path);
    if (app) return app(req, res);
    if (path.startsWith('/api/clients/')) return clients(req, res);
    if (path.startsWith('/api/inflight/')) return inflight(req, res);
    if (path.startsWith(OVERRIDE_PREFIX)) return override(req, res);
    if (path.startsWith(SHED_PREFIX)) return shedding(req, res);
    if (method === 'GET' || method === 'HEAD') {
      if (path === '/' || path === '/index.html') return send(res, 200, 'text/html; charset=utf-8', html);
      if (path === '/app.js') return send(res, 200, 'text/javascript; charset=utf-8', script);
      if (path === '/style.css') return send(res, 200, 'text/css; charset=utf-8', css);
      if (path === '/api/info') return sendJson(res, 200, info);
      if (path === '/favicon.ico') {
        res.writeHead(204).end();
        return;
      }
    }
    if (path === '/api/race') {
      if (method !== 'POST') return sendJson(res, 405, { error: 'POST a JSON body { requests, limit }' });
      if (!race.enabled) return sendJson(res, 503, { error: `No Redis configured. ${RACE_HINT} ${RACE_COMMAND}` });
      let body: { requests?: unknown; limit?: unknown };
      try {
        body = (await readJson(req)) as typeof body;
        const result = await race.run({ requests: body?.requests as number, limit: body?.limit as number });
        return sendJson(res, 200, result);
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        return sendJson(res, error instanceof RangeError ? 400 : 503, { error: message });
      }
    }
    return sendJson(res, 404, { error: `no route for ${method} ${path}` });
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      log(`playground: ${req.method} ${req.url}: ${error instanceof Error ? error.stack : String(error)}`);
      if (!res.headersSent) sendJson(res, 500, { error: 'internal error' });
      else res.destroy();
    });
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    await Promise.all([live.close(), race.close()]);
    throw error;
  }
  const actual = (server.address() as AddressInfo).port;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${actual}/`,
    port: actual,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await Promise.all([live.close(), race.close()]);
    },
  };
}
