// The examples' "which Redis?": REDIS_URL if set, else a redis-server of our own when one is on PATH (stopped on exit), else none.
//
// Why here and not in @floodgate/testing: the examples run this at start-up, for users; @floodgate/testing
// is test infrastructure (faults, clusters, jest-aware exit hooks, an ioredis dependency) that an
// example should not carry. This module uses Node built-ins only, so every example and the
// playground import it by relative path without a new package or dependency.
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import { createServer as createHttpServer, type RequestListener } from 'node:http';
import { createServer } from 'node:net';
import { delimiter, join } from 'node:path';

export interface LocalRedis {
  /** Where to connect; undefined when no Redis is available (use the memory store). */
  readonly url: string | undefined;
  /** Where the URL came from. */
  readonly source: 'REDIS_URL' | 'started' | 'none';
  /** Pid of the redis-server we started, if any. */
  readonly pid: number | undefined;
  /** One line for the console: which Redis, or that counting is in memory and how to change that. */
  readonly description: string;
  /** Stops the redis-server we started (SIGTERM, then SIGKILL after 3 s). Idempotent; no-op otherwise. */
  stop(): Promise<void>;
}

export interface LocalRedisOptions {
  /** Default process.env. */
  env?: NodeJS.ProcessEnv;
  /** What the memory store means for this app, appended to the "no Redis" line. */
  memoryNote?: string;
}

const HOST = '127.0.0.1';
const STARTUP_TIMEOUT_MS = 10_000;
const STOP_GRACE_MS = 3_000;
const BIND_ATTEMPTS = 5;
// With setpriv (util-linux) the kernel kills redis-server even if this process dies by SIGKILL,
// where no exit handler runs. The pid stays redis-server's (setpriv execs).
const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((path) => existsSync(path));

/** The executable `name` on PATH, or undefined. */
export function findOnPath(name: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** Shows a Redis URL without its user name or password. */
export function redactRedisUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.hostname}${u.port ? `:${u.port}` : ''}${u.pathname === '/' ? '' : u.pathname}`;
  } catch {
    return 'the configured REDIS_URL';
  }
}

/**
 * An error listener for a Redis client that prints each new message once, not once per reconnect
 * attempt: a Redis that is down gives one line, not an endless ECONNREFUSED stream.
 * Call the returned `ready` when the client connects, so the next outage is reported again.
 */
export function reportOnce(log: (line: string) => void, label: string): { error: (error: Error) => void; ready: () => void } {
  let last = '';
  return {
    error(error) {
      if (error.message !== last) log(`${label}: ${error.message}`);
      last = error.message;
    },
    ready() {
      last = '';
    },
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, HOST, () => {
      const address = probe.address();
      probe.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

function running(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

function waitForExit(child: ChildProcess, timeoutMs?: number): Promise<boolean> {
  if (!running(child)) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = timeoutMs === undefined ? undefined : setTimeout(() => resolve(false), timeoutMs);
    child.once('exit', () => {
      if (timer) clearTimeout(timer);
      resolve(true);
    });
  });
}

/** Spawns redis-server on `port` and resolves once it says it accepts connections; rejects with its output if it exits. */
function launch(bin: string, port: number): Promise<ChildProcess> {
  // No persistence: an example's counts are throwaway, and nothing is written to the working directory.
  const args = ['--port', String(port), '--bind', HOST, '--save', '', '--appendonly', 'no', '--daemonize', 'no'];
  const child = SETPRIV
    ? spawn(SETPRIV, ['--pdeathsig', 'KILL', bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`redis-server did not start within ${STARTUP_TIMEOUT_MS} ms:\n${output}`));
    }, STARTUP_TIMEOUT_MS);
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      if (/Ready to accept connections/i.test(output)) {
        clearTimeout(timer);
        // Keep draining its output (a full pipe would block redis-server), but no longer keep it.
        child.stdout?.removeListener('data', onData);
        child.stdout?.resume();
        resolve(child);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(Object.assign(new Error(`redis-server exited during start-up (code ${code}, signal ${signal}):\n${output.slice(-2_000)}`), { output }));
    });
  });
}

/**
 * REDIS_URL when set; else a redis-server started on a free loopback port when one is on PATH;
 * else none. A started server is stopped by `stop()` and, should the process end without it,
 * by an exit hook (and by the kernel through setpriv where available).
 */
export async function localRedis(options: LocalRedisOptions = {}): Promise<LocalRedis> {
  const env = options.env ?? process.env;
  const given = env.REDIS_URL?.trim();
  if (given) {
    return { url: given, source: 'REDIS_URL', pid: undefined, description: `Redis at ${redactRedisUrl(given)} (REDIS_URL)`, stop: async () => {} };
  }
  const bin = findOnPath('redis-server', env);
  if (!bin) {
    const note = options.memoryNote ? ` ${options.memoryNote}` : '';
    return {
      url: undefined,
      source: 'none',
      pid: undefined,
      description: `no REDIS_URL and no redis-server on PATH: counting in memory (MemoryStore).${note}`,
      stop: async () => {},
    };
  }

  let child: ChildProcess | undefined;
  let port = 0;
  let lastError: unknown;
  for (let attempt = 0; attempt < BIND_ATTEMPTS && !child; attempt++) {
    port = await freePort();
    try {
      child = await launch(bin, port);
    } catch (error) {
      lastError = error;
      // Another process took the port between the probe and the bind: try another one.
      if (!/Address already in use/i.test(String((error as { output?: string }).output ?? ''))) break;
    }
  }
  if (!child) throw lastError;

  const started = child;
  const killAtExit = (): void => {
    if (running(started)) started.kill('SIGKILL');
  };
  process.on('exit', killAtExit);
  let stopping: Promise<void> | undefined;
  const url = `redis://${HOST}:${port}`;
  return {
    url,
    source: 'started',
    pid: started.pid,
    description: `Redis at ${url}: a redis-server started for this run (pid ${started.pid}), stopped on exit`,
    stop() {
      stopping ??= (async () => {
        process.off('exit', killAtExit);
        if (!running(started)) return;
        started.kill('SIGTERM');
        if (!(await waitForExit(started, STOP_GRACE_MS))) {
          started.kill('SIGKILL');
          await waitForExit(started);
        }
      })();
      return stopping;
    },
  };
}

/**
 * Runs `close` once on the first SIGINT or SIGTERM, then exits: 0 if it finished, 1 if it threw.
 * A second signal while closing exits at once (the exit hook still kills a started redis-server).
 */
export function closeOnSignals(close: () => Promise<void>, log: (line: string) => void = console.error): void {
  let closing = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (closing) process.exit(1);
    closing = true;
    close().then(
      () => process.exit(0),
      (error: unknown) => {
        log(`error while stopping on ${signal}: ${error instanceof Error ? error.message : String(error)}`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}

/** What `exampleRedis` needs of a client: ioredis's `Redis` fits. Structural, so this module imports no client. */
export interface ExampleClient {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the catch-all overload EventEmitter clients declare
  on(event: string, listener: (...args: any[]) => void): unknown;
  disconnect(): void;
}

export interface ExampleRedis<C extends ExampleClient> {
  /** The client to count in Redis with; undefined: count in memory. */
  readonly client: C | undefined;
  /** One line for the console (see LocalRedis.description). */
  readonly description: string;
  /** Pid of the redis-server started for this run, if any. */
  readonly pid: number | undefined;
  /** Disconnects the client, then stops the redis-server started for this run. */
  close(): Promise<void>;
}

/**
 * The Redis an example counts in (localRedis), with a client made by `connect` whose connection
 * errors are printed once per new message.
 */
export async function exampleRedis<C extends ExampleClient>(
  connect: (url: string) => C,
  options: LocalRedisOptions & { log?: (line: string) => void } = {},
): Promise<ExampleRedis<C>> {
  const local = await localRedis(options);
  const client = local.url === undefined ? undefined : connect(local.url);
  if (client) {
    const report = reportOnce(options.log ?? console.error, `redis ${redactRedisUrl(local.url ?? '')}`);
    client.on('error', report.error);
    client.on('ready', report.ready);
  }
  return {
    client,
    description: local.description,
    pid: local.pid,
    async close() {
      client?.disconnect();
      await local.stop();
    },
  };
}

/**
 * Serves `handler` on 127.0.0.1:`port` (0: any free port), prints where and on which Redis, and on
 * SIGINT/SIGTERM closes the server, then the Redis client and any redis-server started for it.
 * Resolves with the URL. For frameworks that listen through Node's http server (Express, Koa).
 */
export async function serveExample(
  name: string,
  handler: RequestListener,
  options: { port: number; redis: ExampleRedis<ExampleClient>; tryLine: (url: string) => string },
): Promise<string> {
  const server = createHttpServer(handler);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, HOST, () => resolve());
  }).catch(async (error: unknown) => {
    await options.redis.close();
    throw error;
  });
  const address = server.address();
  const url = `http://${HOST}:${typeof address === 'object' && address ? address.port : options.port}`;
  console.log(`${name} on ${url}`);
  console.log(`limits: ${options.redis.description}`);
  console.log(`try: ${options.tryLine(url)}`);
  closeOnSignals(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await options.redis.close();
  });
  return url;
}

/**
 * `REDIS_TIMEOUT_MS` from the environment: how long the example's RedisStore waits for Redis
 * (RedisStoreOptions.timeoutMs); unset, Floodgate's default (100 ms). The examples' tests set a long
 * one, so that a loaded test machine's slow answer is not decided by the failure policy instead.
 */
export function redisTimeoutFromEnv(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const text = env.REDIS_TIMEOUT_MS;
  if (text === undefined || text === '') return undefined;
  const ms = Number(text);
  if (!Number.isInteger(ms) || ms < 1 || ms > 60_000) throw new Error(`REDIS_TIMEOUT_MS must be a whole number of milliseconds from 1 to 60000; got ${JSON.stringify(text)}`);
  return ms;
}
