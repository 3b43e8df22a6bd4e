// Starts a real local Redis Cluster (N masters, no replicas) and live-migrates slots between its nodes.
import { Cluster, type ClusterOptions } from 'ioredis';
import { sumCommandStats } from './command-stats';
import { SLOT_COUNT } from './key-slot';
import { pollUntil } from './poll';
import { launchRedis, type RedisServer, type RedisServerProcess } from './redis-server';
import { respCommand, respText, type RespReply } from './resp-command';

export interface RedisClusterHandle {
  /** The masters (>= 3). */
  readonly nodes: RedisServer[];
  readonly startupNodes: { host: string; port: number }[];
  /** A new ioredis Cluster client (caller quits it). Options are merged over sane test defaults. */
  client(options?: ClusterOptions): Cluster;
  /** Which node (index in nodes) owns a slot now. */
  ownerOf(slot: number): Promise<number>;
  /**
   * Live-migrate one slot (with its keys) from its current owner to nodes[toIndex]: SETSLOT
   * IMPORTING/MIGRATING, MIGRATE keys in batches, SETSLOT NODE on all masters. No-op if it is there.
   */
  migrateSlot(slot: number, toIndex: number): Promise<void>;
  /** Sum of commandStats over all nodes. */
  commandStats(): Promise<Record<string, number>>;
  resetStats(): Promise<void>;
  /**
   * Waits (up to 20 s) until every node reports cluster_state:ok and all agree on a full slot map,
   * e.g. after nodes[i].kill() + restart() (a restarted master keeps its nodes.conf and slots, but
   * Redis keeps it unwritable for ~2 s).
   */
  waitUntilHealthy(): Promise<void>;
  /** Stops every node (idempotent). */
  stop(): Promise<void>;
}

export interface StartRedisClusterOptions {
  /** Number of masters, at least 3. Default 3. */
  masters?: number;
}

const NODE_TIMEOUT_MS = 2_000;
const CONVERGE_TIMEOUT_MS = 20_000;
const MIGRATE_BATCH = 100;
const MIGRATE_TIMEOUT_MS = 5_000;

const CLUSTER_CLIENT_DEFAULTS: ClusterOptions = {
  slotsRefreshTimeout: 2_000,
  clusterRetryStrategy: (times: number) => Math.min(times * 100, 1_000),
};

/** One node's view of slot ownership: owner port per slot range, as a canonical string. */
function slotMapOf(reply: RespReply): { map: string; covered: number; owners: Map<string, number> } {
  if (!Array.isArray(reply)) throw new Error('CLUSTER SLOTS: expected an array');
  const ranges: [number, number, number][] = [];
  for (const entry of reply) {
    if (!Array.isArray(entry)) continue;
    const [start, end, master] = entry;
    if (!Array.isArray(master)) continue;
    ranges.push([Number(start), Number(end), Number(master[1])]);
  }
  ranges.sort((a, b) => a[0] - b[0]);
  const owners = new Map<string, number>();
  let covered = 0;
  for (const [start, end, port] of ranges) {
    covered += end - start + 1;
    owners.set(`${start}-${end}`, port);
  }
  return { map: ranges.map((r) => r.join(':')).join(','), covered, owners };
}

function field(info: string, name: string): string | undefined {
  return new RegExp(`^${name}:(.*)$`, 'm').exec(info)?.[1]?.trim();
}

class LocalRedisCluster implements RedisClusterHandle {
  readonly startupNodes: { host: string; port: number }[];

  constructor(
    readonly nodes: RedisServerProcess[],
    private readonly nodeIds: string[],
  ) {
    this.startupNodes = nodes.map((node) => ({ host: node.host, port: node.port }));
  }

  client(options: ClusterOptions = {}): Cluster {
    const client = new Cluster(this.startupNodes, {
      ...CLUSTER_CLIENT_DEFAULTS,
      ...options,
      redisOptions: { connectTimeout: 2_000, ...options.redisOptions },
    });
    client.on('error', () => undefined); // see RedisServer.client()
    return client;
  }

  async ownerOf(slot: number): Promise<number> {
    checkSlot(slot);
    let lastError: unknown;
    for (const node of this.nodes) {
      if (node.pid === undefined) continue;
      try {
        const reply = await respCommand(node.port, ['CLUSTER', 'SLOTS'], { timeoutMs: 2_000 });
        if (!Array.isArray(reply)) continue;
        for (const entry of reply) {
          if (!Array.isArray(entry) || !Array.isArray(entry[2])) continue;
          if (slot >= Number(entry[0]) && slot <= Number(entry[1])) {
            const port = Number(entry[2][1]);
            const index = this.nodes.findIndex((n) => n.port === port);
            if (index === -1) throw new Error(`slot ${slot} is owned by unknown port ${port}`);
            return index;
          }
        }
        throw new Error(`slot ${slot} is not assigned`);
      } catch (error) {
        lastError = error;
      }
    }
    throw lastError instanceof Error ? lastError : new Error('no cluster node answered CLUSTER SLOTS');
  }

  async migrateSlot(slot: number, toIndex: number): Promise<void> {
    checkSlot(slot);
    if (!Number.isInteger(toIndex) || toIndex < 0 || toIndex >= this.nodes.length) {
      throw new RangeError(`migrateSlot: no node at index ${toIndex}`);
    }
    const fromIndex = await this.ownerOf(slot);
    if (fromIndex === toIndex) return;
    const source = this.nodes[fromIndex];
    const target = this.nodes[toIndex];
    const sourceId = this.nodeIds[fromIndex];
    const targetId = this.nodeIds[toIndex];

    await respCommand(target.port, ['CLUSTER', 'SETSLOT', slot, 'IMPORTING', sourceId]);
    await respCommand(source.port, ['CLUSTER', 'SETSLOT', slot, 'MIGRATING', targetId]);
    for (;;) {
      const keys = await respCommand(source.port, ['CLUSTER', 'GETKEYSINSLOT', slot, MIGRATE_BATCH]);
      if (!Array.isArray(keys) || keys.length === 0) break;
      await respCommand(
        source.port,
        ['MIGRATE', target.host, target.port, '', 0, MIGRATE_TIMEOUT_MS, 'REPLACE', 'KEYS', ...(keys as Buffer[])],
        { timeoutMs: MIGRATE_TIMEOUT_MS + 2_000 },
      );
    }
    // Target first (it bumps its config epoch), then source, then every other master.
    const order = [toIndex, fromIndex, ...this.nodes.map((_, i) => i).filter((i) => i !== toIndex && i !== fromIndex)];
    for (const index of order) {
      await respCommand(this.nodes[index].port, ['CLUSTER', 'SETSLOT', slot, 'NODE', targetId]);
    }
    await this.waitForAgreement(`slot ${slot} to move to node ${toIndex}`, async () => {
      return (await this.ownerOfEverywhere(slot)).every((owner) => owner === target.port);
    });
  }

  async commandStats(): Promise<Record<string, number>> {
    return sumCommandStats(await Promise.all(this.nodes.map((node) => node.commandStats())));
  }

  async resetStats(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.resetStats()));
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.stop()));
  }

  async waitUntilHealthy(): Promise<void> {
    await this.waitForAgreement('the cluster to converge', async () => {
      let reference: string | undefined;
      for (const node of this.nodes) {
        const info = await respText(node.port, ['CLUSTER', 'INFO'], { timeoutMs: 2_000 });
        if (field(info, 'cluster_state') !== 'ok') return false;
        if (Number(field(info, 'cluster_known_nodes')) !== this.nodes.length) return false;
        const { map, covered } = slotMapOf(await respCommand(node.port, ['CLUSTER', 'SLOTS'], { timeoutMs: 2_000 }));
        if (covered !== SLOT_COUNT) return false;
        if (reference !== undefined && map !== reference) return false;
        reference = map;
      }
      return true;
    });
  }

  private async ownerOfEverywhere(slot: number): Promise<number[]> {
    return Promise.all(
      this.nodes.map(async (node) => {
        const reply = await respCommand(node.port, ['CLUSTER', 'SLOTS'], { timeoutMs: 2_000 });
        for (const entry of Array.isArray(reply) ? reply : []) {
          if (Array.isArray(entry) && Array.isArray(entry[2]) && slot >= Number(entry[0]) && slot <= Number(entry[1])) {
            return Number(entry[2][1]);
          }
        }
        return -1;
      }),
    );
  }

  private async waitForAgreement(what: string, check: () => Promise<boolean>): Promise<void> {
    await pollUntil(async () => ((await check()) ? true : undefined), {
      timeoutMs: CONVERGE_TIMEOUT_MS,
      intervalMs: 25,
      what,
    });
  }
}

function checkSlot(slot: number): void {
  if (!Number.isInteger(slot) || slot < 0 || slot >= SLOT_COUNT) {
    throw new RangeError(`slot must be an integer in [0, ${SLOT_COUNT - 1}], got ${slot}`);
  }
}

/**
 * Starts `masters` (default 3) cluster-enabled redis-server processes, splits the 16384 slots evenly
 * (ADDSLOTSRANGE), joins them (CLUSTER MEET) and waits until every node reports cluster_state:ok and
 * all agree on slot ownership.
 */
export async function startRedisCluster(options: StartRedisClusterOptions = {}): Promise<RedisClusterHandle> {
  const masters = options.masters ?? 3;
  if (!Number.isInteger(masters) || masters < 3) throw new RangeError('a Redis Cluster needs at least 3 masters');

  const started = await Promise.allSettled(
    Array.from({ length: masters }, () => launchRedis({ cluster: { nodeTimeoutMs: NODE_TIMEOUT_MS } })),
  );
  const nodes = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const failure = started.find((result): result is PromiseRejectedResult => result.status === 'rejected');
  if (failure) {
    await Promise.all(nodes.map((node) => node.stop()));
    throw failure.reason;
  }

  try {
    const nodeIds = await Promise.all(nodes.map((node) => respText(node.port, ['CLUSTER', 'MYID'])));
    await Promise.all(
      nodes.map(async (node, i) => {
        const first = Math.floor((SLOT_COUNT * i) / masters);
        const last = Math.floor((SLOT_COUNT * (i + 1)) / masters) - 1;
        // Distinct epochs up front avoid the slower epoch-collision resolution (as redis-cli does).
        await respCommand(node.port, ['CLUSTER', 'SET-CONFIG-EPOCH', i + 1]);
        await respCommand(node.port, ['CLUSTER', 'ADDSLOTSRANGE', first, last]);
      }),
    );
    const [first, ...others] = nodes;
    for (const node of others) {
      await respCommand(first.port, ['CLUSTER', 'MEET', node.host, node.port, String(node.busPort)]);
    }
    const cluster = new LocalRedisCluster(nodes, nodeIds);
    await cluster.waitUntilHealthy();
    return cluster;
  } catch (error) {
    await Promise.all(nodes.map((node) => node.stop()));
    throw error;
  }
}
