// Connects each Redis client RedisStore supports (ioredis 5 and 6, node-redis) to a real test server or cluster, so one suite runs on all of them.
import { startRedis, startRedisCluster, type RedisClusterHandle, type RedisServer } from '@floodgate/testing';
import { Redis as Ioredis5, type Cluster as Ioredis5Cluster } from 'ioredis';
import { Cluster as Ioredis6Cluster, Redis as Ioredis6 } from 'ioredis6';
import { createClient, createCluster } from 'redis';
import type { RedisClient } from '../../src';

export type ClientKind = 'ioredis 5' | 'ioredis 6' | 'node-redis';
export const CLIENT_KINDS: readonly ClientKind[] = ['ioredis 5', 'ioredis 6', 'node-redis'];

/** A short tag per kind (i5, i6, nr), for key prefixes, which are limited to 32 characters. */
export const kindTag = (kind: ClientKind | ClusterKind): string => (kind.startsWith('node-redis') ? 'nr' : kind.startsWith('ioredis 5') ? 'i5' : 'i6');

export interface ConnectedClient {
  readonly client: RedisClient;
  /** Disconnects without waiting for pending replies (the server may be gone). */
  close(): Promise<void>;
}

/** Logs nothing: tests provoke connection errors on purpose, and node-redis without a listener ends the process. */
const quiet = (): void => {};

/** Who the client logs in as: default, the server's own password (if any); or an ACL user. */
export interface ClientAuth {
  readonly username: string;
  readonly password: string;
}

/**
 * A connected client of this kind; the ioredis ones do not resend after a reconnect (what the docs
 * ask). Over TLS trusting the test CA when the server has TLS; as `auth` when given, else with the
 * default user's password when the server has one.
 */
export async function connectClient(kind: ClientKind, server: RedisServer, auth?: ClientAuth): Promise<ConnectedClient> {
  const login = auth ?? (server.password !== undefined ? { username: 'default', password: server.password } : undefined);
  if (kind === 'node-redis') {
    const client = createClient({
      url: server.url,
      ...(login ?? {}),
      socket: {
        reconnectStrategy: (retries: number) => Math.min(retries * 50, 500),
        ...(server.tls ? { tls: true as const, ca: server.tls.ca } : {}),
      },
    });
    client.on('error', quiet);
    await client.connect();
    return { client, close: async () => void (client.isOpen && client.destroy()) };
  }
  const options = {
    host: server.host,
    port: server.port,
    autoResendUnfulfilledCommands: false,
    maxRetriesPerRequest: 1,
    retryStrategy: (times: number) => Math.min(times * 50, 500),
    ...(server.tls ? { tls: { ca: server.tls.ca } } : {}),
    ...(login ?? {}),
    // A least-privileged user may not run INFO, which the ready check sends (ioredis would warn and skip it).
    ...(auth ? { enableReadyCheck: false } : {}),
  };
  const client = kind === 'ioredis 5' ? new Ioredis5(options) : new Ioredis6(options);
  client.on('error', quiet);
  await client.ping();
  return { client, close: async () => client.disconnect() };
}

export type ClusterKind = 'ioredis 5 cluster' | 'ioredis 6 cluster' | 'node-redis cluster';
export const CLUSTER_KINDS: readonly ClusterKind[] = ['ioredis 5 cluster', 'ioredis 6 cluster', 'node-redis cluster'];

/** A connected cluster client of this kind, reading from masters only. */
export async function connectCluster(kind: ClusterKind, cluster: RedisClusterHandle): Promise<ConnectedClient> {
  if (kind === 'node-redis cluster') {
    const client = createCluster({ rootNodes: cluster.startupNodes.map(({ host, port }) => ({ url: `redis://${host}:${port}` })) });
    client.on('error', quiet);
    await client.connect();
    return { client, close: async () => void (client.isOpen && client.destroy()) };
  }
  const options = { scaleReads: 'master' as const, retryDelayOnFailover: 0, redisOptions: { autoResendUnfulfilledCommands: false } };
  const client = kind === 'ioredis 5 cluster' ? cluster.client(options) : new Ioredis6Cluster(cluster.startupNodes, options);
  client.on('error', quiet);
  await client.ping();
  return { client, close: async () => client.disconnect() };
}

/**
 * A real 3-master Cluster for the test file and a connected client of every cluster kind, started
 * before its tests and stopped after them (call it at the top of the file).
 */
export function clusterWithClients(): { readonly cluster: RedisClusterHandle; client(kind: ClusterKind): RedisClient } {
  let cluster: RedisClusterHandle | undefined;
  const clients = new Map<ClusterKind, ConnectedClient>();
  beforeAll(async () => {
    cluster = await startRedisCluster({ masters: 3 });
    for (const kind of CLUSTER_KINDS) clients.set(kind, await connectCluster(kind, cluster));
  }, 60_000);
  afterAll(async () => {
    for (const connected of clients.values()) await connected.close();
    await cluster?.stop();
  });
  return {
    get cluster() {
      if (!cluster) throw new Error('the Cluster starts in beforeAll: use it inside a test');
      return cluster;
    },
    client: (kind) => clients.get(kind)!.client,
  };
}

/** What a helper started in beforeAll, once it has: used outside a test, it says so. */
function started<T>(value: T | undefined): T {
  if (value === undefined) throw new Error('Redis starts in beforeAll: use it inside a test');
  return value;
}

/**
 * A redis-server for the test file and one ioredis client on it (no resend after a reconnect),
 * started before its tests and stopped after them (call it at the top of the file).
 */
export function serverWithClient(): { readonly server: RedisServer; readonly client: Ioredis5 } {
  let server: RedisServer | undefined;
  let client: Ioredis5 | undefined;
  beforeAll(async () => {
    server = await startRedis();
    client = server.client({ autoResendUnfulfilledCommands: false });
  });
  afterAll(async () => {
    client?.disconnect();
    await server?.stop();
  });
  return {
    get server() {
      return started(server);
    },
    get client() {
      return started(client);
    },
  };
}

/**
 * A redis-server and a real 3-master Cluster for the test file, one ioredis client on each (no
 * resend after a reconnect, the Cluster's reading from masters), started before its tests and
 * stopped after them; `onDone` runs first, once they are over (call it at the top of the file).
 */
export function serverAndCluster(onDone?: () => void): { readonly client: Ioredis5; readonly clusterClient: Ioredis5Cluster } {
  let server: RedisServer | undefined;
  let cluster: RedisClusterHandle | undefined;
  let client: Ioredis5 | undefined;
  let clusterClient: Ioredis5Cluster | undefined;
  beforeAll(async () => {
    [server, cluster] = await Promise.all([startRedis(), startRedisCluster({ masters: 3 })]);
    client = server.client({ autoResendUnfulfilledCommands: false });
    clusterClient = cluster.client({ scaleReads: 'master', retryDelayOnFailover: 0, redisOptions: { autoResendUnfulfilledCommands: false } });
  }, 60_000);
  afterAll(async () => {
    onDone?.();
    client?.disconnect();
    clusterClient?.disconnect();
    await Promise.all([server?.stop(), cluster?.stop()]);
  });
  return {
    get client() {
      return started(client);
    },
    get clusterClient() {
      return started(clusterClient);
    },
  };
}
