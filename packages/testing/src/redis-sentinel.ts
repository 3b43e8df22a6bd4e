// Starts a real Sentinel topology (a master, its replica, three redis-sentinel processes) and fails the master over, timing the promotion.
import { randomBytes } from 'node:crypto';
import { Redis, type RedisOptions } from 'ioredis';
import { freePorts } from './free-ports';
import { pollUntil } from './poll';
import { launchRedis, type RedisServer, type RedisServerProcess } from './redis-server';
import { respCommand } from './resp-command';

export interface StartRedisSentinelOptions {
  /** Sentinels, at least 3 (a quorum of a majority). Default 3. */
  sentinels?: number;
  /** How long a master must be unreachable before a sentinel deems it down. Default 1000 ms. */
  downAfterMs?: number;
  /** The password of the master and replica (`requirepass`; sentinels and replicas authenticate with it). Default: none. */
  password?: string;
}

/** When a failover happened, as the harness saw it (performance.now() ms). */
export interface FailoverTimeline {
  /** The master was killed (killMaster) or SENTINEL FAILOVER was sent (failover). */
  readonly startedAt: number;
  /** The replica first answered ROLE as a master (polled every 10 ms). */
  readonly promotedAt: number;
  /** The sentinels then named it as the master. */
  readonly announcedAt: number;
  /** The server that is master now, and the one that was. */
  readonly master: RedisServer;
  readonly previous: RedisServer;
}

export interface RedisSentinelHandle {
  /** The master name the sentinels monitor ('floodgate'). */
  readonly name: string;
  /** The two data servers, in start order: the initial master, then its replica. */
  readonly servers: readonly RedisServer[];
  readonly sentinels: readonly RedisServer[];
  /** Where clients find the sentinels ([{ host, port }]). */
  readonly sentinelAddresses: readonly { host: string; port: number }[];
  readonly password: string | undefined;
  /** The server the harness last saw as master. */
  master(): RedisServer;
  /** A new ioredis client through the sentinels (caller quits it); options merged over test defaults. */
  client(options?: RedisOptions): Redis;
  /**
   * SIGKILLs the current master and waits until the replica is promoted (ROLE) and the sentinels
   * name it. The killed server stays down (restart it with `previous.restart()`: sentinel then
   * makes it a replica of the new master).
   */
  killMaster(): Promise<FailoverTimeline>;
  /** SENTINEL FAILOVER: the master is demoted to a replica (alive, refusing writes with READONLY) and the replica promoted. */
  failover(): Promise<FailoverTimeline>;
  /** Stops every process (idempotent). */
  stop(): Promise<void>;
}

const NAME = 'floodgate';
/**
 * Sentinel's own periods (SENTINEL DEBUG, Redis 7.0+), shortened from their defaults (INFO every
 * 10 s, hello every 2 s): a sentinel turns a demoted master that still says it is a master into a
 * replica only after it has reported that role for 4 hello periods and been polled again, so with
 * the defaults a SENTINEL FAILOVER left the old master a master for about 10 s. With these it is
 * converted within about 1.5 s. Promotion on a kill is untouched (down-after-milliseconds, and the
 * INFO period Sentinel itself uses during a failover: 1 s).
 */
const SENTINEL_PERIODS = ['info-period', '250', 'publish-period', '250'];
const READY_TIMEOUT_MS = 30_000;
const FAILOVER_TIMEOUT_MS = 30_000;

async function role(server: RedisServerProcess): Promise<string | undefined> {
  if (server.pid === undefined) return undefined;
  const reply = await respCommand(server.port, ['ROLE'], { timeoutMs: 500, ...server.admin });
  return Array.isArray(reply) && Buffer.isBuffer(reply[0]) ? reply[0].toString() : undefined;
}

function field(info: string, name: string): string | undefined {
  return new RegExp(`^${name}:(.*)$`, 'm').exec(info)?.[1]?.trim();
}

class LocalSentinel implements RedisSentinelHandle {
  readonly name = NAME;
  readonly sentinelAddresses: { host: string; port: number }[];
  private current: RedisServerProcess;

  constructor(
    readonly servers: RedisServerProcess[],
    readonly sentinels: RedisServerProcess[],
    readonly password: string | undefined,
  ) {
    this.current = servers[0];
    this.sentinelAddresses = sentinels.map((s) => ({ host: s.host, port: s.port }));
  }

  master(): RedisServer {
    return this.current;
  }

  client(options: RedisOptions = {}): Redis {
    const client = new Redis({
      sentinels: this.sentinelAddresses,
      name: NAME,
      connectTimeout: 2_000,
      maxRetriesPerRequest: 1,
      retryStrategy: (times: number) => Math.min(times * 50, 500),
      ...(this.password !== undefined ? { password: this.password } : {}),
      ...options,
    });
    client.on('error', () => undefined); // see RedisServer.client()
    return client;
  }

  /** The master's port as the first sentinel that answers names it. */
  async announcedPort(): Promise<number | undefined> {
    for (const sentinel of this.sentinels) {
      if (sentinel.pid === undefined) continue;
      try {
        const reply = await respCommand(sentinel.port, ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', NAME], { timeoutMs: 500 });
        if (Array.isArray(reply) && reply.length === 2) return Number(String(reply[1]));
      } catch {
        // try the next sentinel
      }
    }
    return undefined;
  }

  /** Every sentinel knows the master, its replica and the other sentinels: a failover can happen. */
  async waitUntilReady(): Promise<void> {
    const replicas = this.servers.length - 1;
    await pollUntil(
      async () => {
        for (const sentinel of this.sentinels) {
          const reply = await respCommand(sentinel.port, ['SENTINEL', 'MASTER', NAME], { timeoutMs: 1_000 });
          if (!Array.isArray(reply)) return undefined;
          const map = new Map<string, string>();
          for (let i = 0; i + 1 < reply.length; i += 2) map.set(String(reply[i]), String(reply[i + 1]));
          if (Number(map.get('num-slaves')) < replicas || Number(map.get('num-other-sentinels')) < this.sentinels.length - 1) return undefined;
          if (!/^master$/.test(map.get('flags') ?? '')) return undefined;
        }
        return true;
      },
      { timeoutMs: READY_TIMEOUT_MS, intervalMs: 50, what: 'the sentinels to know the master, its replica and each other' },
    );
  }

  async killMaster(): Promise<FailoverTimeline> {
    const previous = this.current;
    const startedAt = performance.now();
    await previous.kill();
    return this.awaitPromotion(previous, startedAt);
  }

  async failover(): Promise<FailoverTimeline> {
    const previous = this.current;
    const startedAt = performance.now();
    await respCommand(this.sentinels[0].port, ['SENTINEL', 'FAILOVER', NAME]);
    const timeline = await this.awaitPromotion(previous, startedAt);
    // Demoted: the old master now answers as a replica.
    await pollUntil(async () => ((await role(previous).catch(() => undefined)) === 'slave' ? true : undefined), {
      timeoutMs: FAILOVER_TIMEOUT_MS,
      intervalMs: 20,
      what: `the old master (port ${previous.port}) to become a replica`,
    });
    return timeline;
  }

  private async awaitPromotion(previous: RedisServerProcess, startedAt: number): Promise<FailoverTimeline> {
    const candidates = this.servers.filter((s) => s !== previous);
    const master = await pollUntil(
      async () => {
        for (const server of candidates) if ((await role(server).catch(() => undefined)) === 'master') return server;
        return undefined;
      },
      { timeoutMs: FAILOVER_TIMEOUT_MS, intervalMs: 10, what: 'a replica to be promoted' },
    );
    const promotedAt = performance.now();
    await pollUntil(async () => ((await this.announcedPort()) === master.port ? true : undefined), {
      timeoutMs: FAILOVER_TIMEOUT_MS,
      intervalMs: 10,
      what: `the sentinels to name port ${master.port} as the master`,
    });
    this.current = master;
    return { startedAt, promotedAt, announcedAt: performance.now(), master, previous };
  }

  async stop(): Promise<void> {
    await Promise.all([...this.sentinels, ...this.servers].map((p) => p.stop()));
  }
}

/**
 * Starts a master, one replica of it, and `sentinels` (default 3) redis-sentinel processes that
 * monitor it with a quorum of 2, all on free loopback ports, and waits until every sentinel knows
 * the replica and the others (so a failover can happen at once).
 */
export async function startRedisSentinel(options: StartRedisSentinelOptions = {}): Promise<RedisSentinelHandle> {
  const count = options.sentinels ?? 3;
  if (!Number.isInteger(count) || count < 3) throw new RangeError('a Sentinel topology needs at least 3 sentinels');
  const downAfterMs = options.downAfterMs ?? 1_000;
  // Diskless sync starts at once (Redis waits 5 s by default for more replicas to share one transfer).
  const auth = [...(options.password !== undefined ? ['--masterauth', options.password] : []), '--repl-diskless-sync-delay', '0'];
  const started: RedisServerProcess[] = [];
  try {
    const master = await launchRedis({ password: options.password, args: auth });
    started.push(master);
    const replica = await launchRedis({ password: options.password, args: [...auth, '--replicaof', master.host, String(master.port)] });
    started.push(replica);
    await pollUntil(async () => (field(await replica.info('replication'), 'master_link_status') === 'up' ? true : undefined), {
      timeoutMs: READY_TIMEOUT_MS,
      intervalMs: 20,
      what: 'the replica to sync with its master',
    });
    // Each sentinel is told its own id, the replica and the other sentinels up front (as a sentinel
    // writes them into its own configuration), so none waits for hello messages to find them.
    const ports = await freePorts(count);
    const ids = ports.map(() => randomBytes(20).toString('hex'));
    const sentinels = await Promise.all(
      ports.map((port, i) =>
        launchRedis({
          port,
          sentinel: {
            config: [
              `sentinel myid ${ids[i]}`,
              `sentinel monitor ${NAME} ${master.host} ${master.port} 2`,
              `sentinel down-after-milliseconds ${NAME} ${downAfterMs}`,
              `sentinel failover-timeout ${NAME} 10000`,
              `sentinel parallel-syncs ${NAME} 1`,
              ...(options.password !== undefined ? [`sentinel auth-pass ${NAME} ${options.password}`] : []),
              `sentinel known-replica ${NAME} ${replica.host} ${replica.port}`,
              ...ports.flatMap((other, j) => (j === i ? [] : [`sentinel known-sentinel ${NAME} 127.0.0.1 ${other} ${ids[j]}`])),
              '',
            ].join('\n'),
          },
        }),
      ),
    );
    started.push(...sentinels);
    await Promise.all(sentinels.map((s) => respCommand(s.port, ['SENTINEL', 'DEBUG', ...SENTINEL_PERIODS])));
    const handle = new LocalSentinel([master, replica], sentinels, options.password);
    await handle.waitUntilReady();
    return handle;
  } catch (error) {
    await Promise.all(started.map((p) => p.stop()));
    throw error;
  }
}

