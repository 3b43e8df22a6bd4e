// A local server speaking Upstash's Redis REST protocol (POST / with a JSON command array, POST /pipeline with an array of them) in front of a real redis-server, for tests of RedisStore over HTTP.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Redis } from 'ioredis';
import type { RedisServer } from './redis-server';

export interface RedisRestServer {
  /** http://127.0.0.1:PORT: give it to `new Redis({ url, token })` from @upstash/redis. */
  readonly url: string;
  /** The bearer token it requires (random per server). */
  readonly token: string;
  /** Requests served, by path: `/` (one command) and `/pipeline` (several in one request). */
  readonly requests: { single: number; pipeline: number; pipelinedCommands: number };
  /** Closes the HTTP server and its Redis connection (the redis-server keeps running). */
  stop(): Promise<void>;
}

type Reply = string | number | null | Reply[] | Buffer;

/** Upstash-Encoding: base64 asks every string of a result in base64 (integers stay JSON numbers). */
function encode(reply: Reply, base64: boolean): unknown {
  if (Array.isArray(reply)) return reply.map((r) => encode(r, base64));
  if (Buffer.isBuffer(reply)) return base64 ? reply.toString('base64') : reply.toString('utf8');
  if (typeof reply === 'string') return base64 && reply !== 'OK' ? Buffer.from(reply, 'utf8').toString('base64') : reply;
  return reply;
}

/** One command: `{ result }`, or `{ error }` with the server's own message ('NOSCRIPT No matching script...'). */
async function run(redis: Redis, command: unknown, base64: boolean): Promise<{ result?: unknown; error?: string }> {
  if (!Array.isArray(command) || command.length === 0 || !command.every((a) => typeof a === 'string' || typeof a === 'number')) {
    return { error: 'ERR a command is a non-empty JSON array of strings and numbers' };
  }
  try {
    const [name, ...args] = command as (string | number)[];
    return { result: encode((await redis.call(String(name), ...args)) as Reply, base64) };
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function reply(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/**
 * Starts the REST front of `server` on a free loopback port. Like Upstash: a bearer token; `/`
 * runs one command (HTTP 400 with `{ error }` when Redis refuses it); `/pipeline` runs each command
 * in order on one connection, not atomically, one `{ result }` or `{ error }` each, HTTP 200.
 */
export async function startRedisRest(server: RedisServer): Promise<RedisRestServer> {
  const redis = server.client({ autoResendUnfulfilledCommands: false, enableOfflineQueue: true });
  const token = randomBytes(12).toString('hex');
  const requests = { single: 0, pipeline: 0, pipelinedCommands: 0 };
  const http: Server = createServer((req, res) => {
    void (async () => {
      if (req.method !== 'POST') return reply(res, 405, { error: 'ERR only POST' });
      if (req.headers.authorization !== `Bearer ${token}`) return reply(res, 401, { error: 'Unauthorized' });
      let body: unknown;
      try {
        body = JSON.parse(await readBody(req));
      } catch {
        return reply(res, 400, { error: 'ERR the body is not JSON' });
      }
      const base64 = String(req.headers['upstash-encoding'] ?? '').toLowerCase() === 'base64';
      const path = (req.url ?? '/').split('?')[0];
      if (path === '/pipeline' || path === '/pipeline/') {
        if (!Array.isArray(body)) return reply(res, 400, { error: 'ERR a pipeline is a JSON array of commands' });
        requests.pipeline++;
        requests.pipelinedCommands += body.length;
        // Sent together on one connection, answered in order: Redis runs them one after another.
        return reply(res, 200, await Promise.all(body.map((command) => run(redis, command, base64))));
      }
      if (path !== '/') return reply(res, 404, { error: `ERR unknown path ${path}` });
      requests.single++;
      const answer = await run(redis, body, base64);
      return reply(res, answer.error === undefined ? 200 : 400, answer);
    })().catch((error: unknown) => reply(res, 500, { error: String(error) }));
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    token,
    requests,
    async stop() {
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
      redis.disconnect();
    },
  };
}
