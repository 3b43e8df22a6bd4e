// Starts, stops, kills, pauses and restarts one real redis-server process on a free loopback port, optionally with TLS, a password and ACL users.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis, type RedisOptions } from 'ioredis';
import { parseCommandStats } from './command-stats';
import { freePorts } from './free-ports';
import { pollUntil } from './poll';
import {
  OWNER_FILE,
  TEMP_DIR_PREFIX,
  onProcessExit,
  ownerPid,
  removeDirQuietly,
  sweepStaleTempDirs,
} from './process-cleanup';
import { respCommand, respText, type RespCommandOptions, type RespReply } from './resp-command';
import { tlsMaterial, type TlsMaterial } from './tls-material';

export interface RedisServer {
  readonly host: '127.0.0.1';
  readonly port: number;
  /** redis://127.0.0.1:PORT, or rediss://127.0.0.1:PORT with TLS (no credentials in it). */
  readonly url: string;
  /** With `tls`: the test CA and certificates (the port then speaks TLS only). */
  readonly tls: TlsMaterial | undefined;
  /** The default user's password when the server requires one (`password` or `users`), else undefined. */
  readonly password: string | undefined;
  /** Pid of the current redis-server process; undefined while it is not running. */
  readonly pid: number | undefined;
  /**
   * A new ioredis client to this server (caller quits it), over TLS trusting the test CA and with the
   * default user's password when the server has them. Options are merged over sane test defaults.
   */
  client(options?: RedisOptions): Redis;
  /** One command as the default (all-powerful) user on a short-lived connection, e.g. ['ACL', 'SETUSER', ...]. */
  command(args: (string | number | Buffer)[]): Promise<RespReply>;
  /** Graceful stop (SIGTERM, SIGKILL after 5 s) and wait for exit; removes the temp dir. Idempotent. */
  stop(): Promise<void>;
  /** SIGKILL and wait for exit. The temp dir is kept (a cluster node restarts with its nodes.conf). */
  kill(): Promise<void>;
  /** SIGSTOP: the process keeps its socket, accepts TCP connections but never answers. */
  pause(): void;
  /** SIGCONT. */
  resume(): void;
  /** Start again on the SAME port after kill/stop (waits until it answers PING). Data is not kept. */
  restart(): Promise<void>;
  /** INFO [section] via a short-lived connection; the raw reply text. */
  info(section?: string): Promise<string>;
  /** Parsed INFO commandstats: { evalsha: 12, get: 3, ... } (calls per command, lower-case names). */
  commandStats(): Promise<Record<string, number>>;
  /** CONFIG RESETSTAT */
  resetStats(): Promise<void>;
}

export interface StartRedisOptions {
  /** Fixed port. Default: a free port (retried on a bind race). */
  port?: number;
  /** Extra redis-server arguments, appended after the defaults (so they win), e.g. ['--maxmemory', '10mb']. */
  args?: string[];
  /**
   * Serve TLS only on the port (`--tls-port`, plain port off), with a CA and certificates made by
   * openssl for this run. Client certificates are accepted but not required, as on managed services.
   * Default false.
   */
  tls?: boolean;
  /** The default user's password (`requirepass`). `true`: a random one. Default: none, unless `users` is given (then random). */
  password?: string | true;
  /** ACL users, each `user <name> on >password <rules>` in the server's configuration (kept across restarts). */
  users?: readonly AclUser[];
}

/** One ACL user: rules as ACL SETUSER takes them, e.g. '~fg:* -@all +evalsha'. */
export interface AclUser {
  readonly name: string;
  readonly password: string;
  readonly rules: string;
}

/** Internal: how a cluster node differs from a standalone server. */
export interface NodeLaunchOptions extends StartRedisOptions {
  cluster?: { nodeTimeoutMs: number };
  /** Run redis-sentinel with this configuration (written once into the temp dir: a sentinel rewrites it, and keeps it across restarts). */
  sentinel?: { config: string };
}

const HOST = '127.0.0.1' as const;
const STARTUP_TIMEOUT_MS = 10_000;
const STOP_GRACE_MS = 5_000;
const BIND_RETRIES = 5;
const REDIS_SERVER_BIN = process.env.FLOODGATE_REDIS_SERVER ?? 'redis-server';
const REDIS_SENTINEL_BIN = process.env.FLOODGATE_REDIS_SENTINEL ?? 'redis-sentinel';

/** Sane defaults for test clients: fail fast instead of retrying for a long time. */
const CLIENT_DEFAULTS: RedisOptions = {
  connectTimeout: 2_000,
  maxRetriesPerRequest: 1,
  retryStrategy: (times: number) => Math.min(times * 50, 500),
};

// With setpriv (util-linux) the kernel SIGKILLs redis-server if the Node process dies abruptly
// (SIGKILL, crash), where no exit handler can run. The pid stays redis-server's (setpriv execs).
const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((path) => existsSync(path));

class StartupError extends Error {
  constructor(
    message: string,
    readonly addressInUse: boolean,
  ) {
    super(message);
    this.name = 'StartupError';
  }
}

function isRunning(child: ChildProcess | undefined): child is ChildProcess {
  return child !== undefined && child.exitCode === null && child.signalCode === null;
}

function waitForExit(child: ChildProcess, timeoutMs?: number): Promise<boolean> {
  if (!isRunning(child)) return Promise.resolve(true);
  child.ref(); // keep a plain Node script alive until the exit is observed
  return new Promise<boolean>((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    const onExit = (): void => {
      if (timer) clearTimeout(timer);
      child.unref();
      resolve(true);
    };
    child.once('exit', onExit);
    if (timeoutMs !== undefined) {
      timer = setTimeout(() => {
        child.off('exit', onExit);
        child.unref();
        resolve(false);
      }, timeoutMs);
    }
  });
}

export class RedisServerProcess implements RedisServer {
  readonly host = HOST;
  readonly url: string;
  readonly tls: TlsMaterial | undefined;
  readonly password: string | undefined;
  private child: ChildProcess | undefined;
  private paused = false;
  private dir: string | undefined;
  private unregisterCleanup: (() => void) | undefined;

  constructor(
    readonly port: number,
    /** Cluster bus port (cluster nodes only). */
    readonly busPort: number | undefined,
    private readonly launch: NodeLaunchOptions,
  ) {
    this.tls = launch.tls ? tlsMaterial() : undefined;
    const password = launch.password ?? (launch.users?.length ? true : undefined);
    this.password = password === true ? randomBytes(12).toString('hex') : password;
    this.url = `${this.tls ? 'rediss' : 'redis'}://${HOST}:${port}`;
  }

  /** How the harness's own one-off commands reach this server: TLS and AUTH as configured. */
  get admin(): RespCommandOptions {
    return {
      ...(this.tls ? { tls: { ca: this.tls.ca } } : {}),
      ...(this.password !== undefined ? { auth: { password: this.password } } : {}),
    };
  }

  get pid(): number | undefined {
    return isRunning(this.child) ? this.child.pid : undefined;
  }

  /** The temp dir (redis `dir`, log and nodes.conf); undefined after stop(). */
  get directory(): string | undefined {
    return this.dir;
  }

  client(options: RedisOptions = {}): Redis {
    const client = new Redis({
      ...CLIENT_DEFAULTS,
      host: HOST,
      port: this.port,
      ...(this.tls ? { tls: { ca: this.tls.ca } } : {}),
      ...(this.password !== undefined ? { password: this.password } : {}),
      ...options,
    });
    // Tests kill and pause servers on purpose; without a listener ioredis prints every connection
    // error as "Unhandled error event". Commands still reject normally.
    client.on('error', () => undefined);
    return client;
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (isRunning(child)) {
      child.kill('SIGTERM');
      if (this.paused) child.kill('SIGCONT'); // a stopped process only acts on SIGTERM once continued
      if (!(await waitForExit(child, STOP_GRACE_MS))) {
        child.kill('SIGKILL');
        await waitForExit(child);
      }
    }
    this.paused = false;
    this.child = undefined;
    if (this.dir) removeDirQuietly(this.dir);
    this.dir = undefined;
    this.unregisterCleanup?.();
    this.unregisterCleanup = undefined;
  }

  async kill(): Promise<void> {
    const child = this.child;
    if (isRunning(child)) {
      child.kill('SIGKILL'); // works on a SIGSTOPped process too
      await waitForExit(child);
    }
    this.paused = false;
  }

  pause(): void {
    const child = this.child;
    if (!isRunning(child)) throw new Error(`pause(): redis-server on port ${this.port} is not running`);
    child.kill('SIGSTOP');
    this.paused = true;
  }

  resume(): void {
    const child = this.child;
    if (isRunning(child)) child.kill('SIGCONT');
    this.paused = false;
  }

  async restart(): Promise<void> {
    await this.kill();
    await this.startAndWait();
  }

  command(args: (string | number | Buffer)[]): Promise<RespReply> {
    return respCommand(this.port, args, this.admin);
  }

  async info(section?: string): Promise<string> {
    return respText(this.port, section === undefined ? ['INFO'] : ['INFO', section], this.admin);
  }

  async commandStats(): Promise<Record<string, number>> {
    return parseCommandStats(await this.info('commandstats'));
  }

  async resetStats(): Promise<void> {
    await respCommand(this.port, ['CONFIG', 'RESETSTAT'], this.admin);
  }

  /** Internal: spawn redis-server and wait until this very process answers PING. */
  async startAndWait(): Promise<void> {
    const child = this.spawnProcess();
    try {
      const outcome = await pollUntil<'ready' | 'exited'>(
        async () => {
          if (!isRunning(child)) return 'exited';
          const pong = await respCommand(this.port, ['PING'], { timeoutMs: 1_000, ...this.admin });
          if (pong !== 'PONG') return undefined;
          // Another process may own the port (bind race): only accept our own pid.
          const info = await respText(this.port, ['INFO', 'server'], { timeoutMs: 1_000, ...this.admin });
          return /process_id:(\d+)/.exec(info)?.[1] === String(child.pid) ? 'ready' : undefined;
        },
        { timeoutMs: STARTUP_TIMEOUT_MS, intervalMs: 15, what: `redis-server on port ${this.port}` },
      ).catch((error: unknown) => {
        throw new StartupError(`${(error as Error).message}\nredis-server output:\n${this.logTail()}`, false);
      });
      if (outcome === 'exited') {
        await waitForExit(child); // exit codes are set; wait for the log to be complete
        const log = this.logTail();
        throw new StartupError(
          `redis-server on port ${this.port} exited during startup ` +
            `(code ${child.exitCode}, signal ${child.signalCode}). Output:\n${log}`,
          /Address already in use/i.test(log),
        );
      }
    } catch (error) {
      if (isRunning(child)) {
        child.kill('SIGKILL');
        await waitForExit(child);
      }
      throw error;
    }
  }

  private spawnProcess(): ChildProcess {
    if (this.dir === undefined || !existsSync(this.dir)) {
      sweepStaleTempDirs();
      this.dir = mkdtempSync(join(tmpdir(), TEMP_DIR_PREFIX));
      writeFileSync(join(this.dir, OWNER_FILE), String(ownerPid()));
    }
    const dir = this.dir;
    const sentinel = this.launch.sentinel;
    if (sentinel) {
      const config = join(dir, 'sentinel.conf');
      if (!existsSync(config)) writeFileSync(config, sentinel.config);
      return this.spawnBinary(REDIS_SENTINEL_BIN, [config, '--port', String(this.port), '--bind', HOST, '--dir', dir, '--daemonize', 'no', '--protected-mode', 'no']);
    }
    const args = [
      ...(this.tls
        ? [
            '--port', '0',
            '--tls-port', String(this.port),
            '--tls-cert-file', this.tls.serverCertFile,
            '--tls-key-file', this.tls.serverKeyFile,
            '--tls-ca-cert-file', this.tls.caFile,
            '--tls-auth-clients', 'optional',
          ]
        : ['--port', String(this.port)]),
      '--bind', HOST,
      '--save', '',
      '--appendonly', 'no',
      '--dir', dir,
      '--daemonize', 'no',
      '--protected-mode', 'no',
    ];
    if (this.launch.cluster) {
      args.push(
        '--cluster-enabled', 'yes',
        '--cluster-config-file', join(dir, 'nodes.conf'),
        '--cluster-node-timeout', String(this.launch.cluster.nodeTimeoutMs),
        '--cluster-port', String(this.busPort),
      );
    }
    if (this.password !== undefined) args.push('--requirepass', this.password);
    for (const user of this.launch.users ?? []) {
      args.push('--user', user.name, 'on', `>${user.password}`, ...user.rules.split(/\s+/).filter(Boolean));
    }
    args.push(...(this.launch.args ?? []));
    return this.spawnBinary(REDIS_SERVER_BIN, args);
  }

  private spawnBinary(binary: string, args: string[]): ChildProcess {
    const logFd = openSync(join(this.dir!, 'redis.log'), 'a');
    let child: ChildProcess;
    try {
      child = SETPRIV
        ? spawn(SETPRIV, ['--pdeathsig', 'KILL', binary, ...args], { stdio: ['ignore', logFd, logFd] })
        : spawn(binary, args, { stdio: ['ignore', logFd, logFd] });
    } finally {
      closeSync(logFd);
    }
    child.on('error', () => undefined); // spawn failures surface as an exit during startup
    child.unref(); // a running server alone does not keep Node alive
    this.child = child;
    this.paused = false;
    if (!this.unregisterCleanup) {
      this.unregisterCleanup = onProcessExit(() => {
        if (isRunning(this.child)) this.child.kill('SIGKILL');
        if (this.dir) removeDirQuietly(this.dir);
      });
    }
    return child;
  }

  private logTail(): string {
    if (!this.dir) return '(no log)';
    try {
      const text = readFileSync(join(this.dir, 'redis.log'), 'utf8');
      return text.length > 3_000 ? text.slice(-3_000) : text || '(empty)';
    } catch {
      return '(no log)';
    }
  }
}

/** Internal: start a standalone server or cluster node, retrying with new ports on a bind race. */
export async function launchRedis(options: NodeLaunchOptions = {}): Promise<RedisServerProcess> {
  const attempts = options.port === undefined ? BIND_RETRIES : 1;
  let lastError: unknown;
  for (let attempt = 0; attempt < attempts; attempt++) {
    const [picked, bus] = await freePorts(options.cluster ? 2 : 1);
    const server = new RedisServerProcess(options.port ?? picked, options.cluster ? bus : undefined, options);
    try {
      await server.startAndWait();
      return server;
    } catch (error) {
      lastError = error;
      await server.stop();
      if (!(error instanceof StartupError && error.addressInUse)) break;
    }
  }
  throw lastError;
}

/** Starts a real redis-server on 127.0.0.1 (a free port unless given) and waits until it answers PING. */
export function startRedis(options: StartRedisOptions = {}): Promise<RedisServer> {
  return launchRedis({ port: options.port, args: options.args, tls: options.tls, password: options.password, users: options.users });
}
