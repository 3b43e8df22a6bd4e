// Tests for @floodgate/testing against real redis-server processes and a real local cluster.
import { connect } from 'node:net';
import type { Redis } from 'ioredis';
import { keySlot, startRedis, startRedisCluster, type RedisClusterHandle, type RedisServer } from './index';

function tcpConnects(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

describe('startRedis', () => {
  const servers: RedisServer[] = [];
  const clients: Redis[] = [];
  const track = <T extends RedisServer>(server: T): T => (servers.push(server), server);
  const clientOf = (server: RedisServer, options?: Parameters<RedisServer['client']>[0]): Redis => {
    const client = server.client(options);
    clients.push(client);
    return client;
  };

  afterAll(async () => {
    clients.forEach((client) => client.disconnect());
    await Promise.all(servers.map((server) => server.stop()));
  });

  it('starts a server that answers PING', async () => {
    const server = track(await startRedis());
    expect(server.host).toBe('127.0.0.1');
    expect(server.port).not.toBe(6379);
    expect(server.url).toBe(`redis://127.0.0.1:${server.port}`);
    expect(server.pid).toEqual(expect.any(Number));
    await expect(clientOf(server).ping()).resolves.toBe('PONG');
    expect(await server.info('server')).toContain(`process_id:${server.pid}`);
  });

  it('gives two servers different ports', async () => {
    const [a, b] = await Promise.all([startRedis(), startRedis()]);
    track(a);
    track(b);
    expect(a.port).not.toBe(b.port);
    await clientOf(a).set('k', 'a');
    expect(await clientOf(b).get('k')).toBeNull();
  });

  it('passes extra args to redis-server', async () => {
    const server = track(await startRedis({ args: ['--maxmemory', '12mb'] }));
    expect(await clientOf(server).config('GET', 'maxmemory')).toEqual(['maxmemory', String(12 * 1024 * 1024)]);
  });

  it('restarts on the same port after kill, repeatedly, without the old data', async () => {
    const server = track(await startRedis());
    const port = server.port;
    const longLived = clientOf(server);
    await longLived.set('k', 'v');
    for (let round = 0; round < 2; round++) {
      const oldPid = server.pid;
      await server.kill();
      expect(server.pid).toBeUndefined();
      expect(await tcpConnects(port)).toBe(false);
      await server.restart();
      expect(server.port).toBe(port);
      expect(server.pid).toEqual(expect.any(Number));
      expect(server.pid).not.toBe(oldPid);
      const fresh = clientOf(server);
      await expect(fresh.ping()).resolves.toBe('PONG');
      expect(await fresh.get('k')).toBeNull();
    }
    // A client created before the kills reconnects by itself.
    await expect(longLived.ping()).resolves.toBe('PONG');
  });

  it('restarts after a graceful stop, and stop is idempotent', async () => {
    const server = track(await startRedis());
    await server.stop();
    await server.stop();
    expect(server.pid).toBeUndefined();
    await server.restart();
    await expect(clientOf(server).ping()).resolves.toBe('PONG');
  });

  it('pause keeps accepting TCP connections but never answers; resume answers again', async () => {
    const server = track(await startRedis());
    const client = clientOf(server, { commandTimeout: 200 });
    await expect(client.ping()).resolves.toBe('PONG');
    server.pause();
    server.pause(); // harmless
    await expect(client.get('x')).rejects.toThrow(/timed out/i);
    expect(await tcpConnects(server.port)).toBe(true);
    server.resume();
    await expect(client.ping()).resolves.toBe('PONG');
  });

  it('stops and kills a paused server', async () => {
    const [a, b] = await Promise.all([startRedis(), startRedis()]);
    track(a);
    track(b);
    a.pause();
    b.pause();
    await a.stop();
    await b.kill();
    expect(a.pid).toBeUndefined();
    expect(b.pid).toBeUndefined();
    await b.restart();
    await expect(clientOf(b).ping()).resolves.toBe('PONG');
  });

  it('counts commands after resetStats', async () => {
    const server = track(await startRedis());
    const client = clientOf(server);
    await client.ping();
    await server.resetStats();
    await client.set('a', '1');
    await client.set('b', '2');
    await client.set('c', '3');
    await client.get('a');
    const stats = await server.commandStats();
    expect(stats.set).toBe(3);
    expect(stats.get).toBe(1);
    expect(stats.ping).toBeUndefined();
  });

  it('fails clearly when the port is taken', async () => {
    const server = track(await startRedis());
    await expect(startRedis({ port: server.port })).rejects.toThrow(/exited during startup[\s\S]*Address already in use/);
  });
});

describe('keySlot', () => {
  it('matches known CRC16 slots and the hash-tag rule', () => {
    expect(keySlot('123456789')).toBe(0x31c3 & 16383);
    expect(keySlot('foo')).toBe(12182);
    expect(keySlot('{user1000}.following')).toBe(keySlot('{user1000}.followers'));
    expect(keySlot('{user1000}.following')).toBe(keySlot('user1000'));
    expect(keySlot('foo{}{bar}')).not.toBe(keySlot('bar'));
    expect(keySlot('foo{{bar}}zap')).toBe(keySlot('{bar'));
    expect(keySlot('foo{bar}{zap}')).toBe(keySlot('bar'));
  });
});

describe('startRedisCluster', () => {
  let cluster: RedisClusterHandle;
  const clients: { disconnect(): void }[] = [];

  beforeAll(async () => {
    cluster = await startRedisCluster();
  });

  afterAll(async () => {
    clients.forEach((client) => client.disconnect());
    await cluster?.stop();
  });

  it('has 3 masters covering all 16384 slots', async () => {
    expect(cluster.nodes).toHaveLength(3);
    expect(cluster.startupNodes).toEqual(cluster.nodes.map((n) => ({ host: '127.0.0.1', port: n.port })));
    const client = cluster.client();
    clients.push(client);
    const slots = await client.cluster('SLOTS');
    const covered = slots.reduce((sum, [start, end]) => sum + end - start + 1, 0);
    expect(covered).toBe(16384);
    expect(new Set(slots.map(([, , master]) => master[1]))).toEqual(new Set(cluster.nodes.map((n) => n.port)));
    expect(await cluster.ownerOf(0)).toBe(0);
    expect(await cluster.ownerOf(16383)).toBe(2);
  });

  it('agrees with CLUSTER KEYSLOT', async () => {
    const node = cluster.nodes[0].client();
    clients.push(node);
    for (const key of ['foo', 'a{b}c', 'x{}y', '{{z}}', 'rl:ü:42', '', 'k'.repeat(300)]) {
      expect(keySlot(key)).toBe(await node.cluster('KEYSLOT', key));
    }
  });

  it('SET/GET keys spread over every master, and sums command stats', async () => {
    const client = cluster.client();
    clients.push(client);
    await cluster.resetStats();
    const keys = Array.from({ length: 60 }, (_, i) => `spread:${i}`);
    for (const key of keys) await client.set(key, `v-${key}`);
    for (const key of keys) expect(await client.get(key)).toBe(`v-${key}`);

    const owners = new Set<number>();
    for (const key of keys) owners.add(await cluster.ownerOf(keySlot(key)));
    expect(owners).toEqual(new Set([0, 1, 2]));
    for (const node of cluster.nodes) {
      const direct = node.client();
      clients.push(direct);
      expect(await direct.dbsize()).toBeGreaterThan(0);
    }
    const stats = await cluster.commandStats();
    expect(stats.set).toBe(keys.length);
    expect(stats.get).toBe(keys.length);
  });

  it('migrateSlot moves a slot with its keys; the Cluster client still reads them', async () => {
    const client = cluster.client();
    clients.push(client);
    const keys = Array.from({ length: 250 }, (_, i) => `{migrate}:${i}`);
    const slot = keySlot(keys[0]);
    for (const key of keys) await client.set(key, key.toUpperCase());

    const from = await cluster.ownerOf(slot);
    const to = (from + 1) % cluster.nodes.length;
    await cluster.migrateSlot(slot, to);

    expect(await cluster.ownerOf(slot)).toBe(to);
    const target = cluster.nodes[to].client();
    const source = cluster.nodes[from].client();
    clients.push(target, source);
    expect(await target.cluster('COUNTKEYSINSLOT', slot)).toBe(keys.length);
    expect(await source.cluster('COUNTKEYSINSLOT', slot)).toBe(0);

    // The client's slot cache is stale; MOVED redirects it.
    expect(await client.mget(...keys)).toEqual(keys.map((key) => key.toUpperCase()));
    await client.set('{migrate}:new', 'yes');
    expect(await target.get('{migrate}:new')).toBe('yes');

    // And back again (a second migration of the same slot also works).
    await cluster.migrateSlot(slot, from);
    expect(await cluster.ownerOf(slot)).toBe(from);
    expect(await client.get('{migrate}:0')).toBe('{MIGRATE}:0');
  });

  it('a killed master restarts with its slots and rejoins', async () => {
    const client = cluster.client();
    clients.push(client);
    const key = 'rejoin:key';
    const owner = await cluster.ownerOf(keySlot(key));
    await cluster.nodes[owner].kill();
    await cluster.nodes[owner].restart();
    await cluster.waitUntilHealthy();
    expect(await cluster.ownerOf(keySlot(key))).toBe(owner);
    await client.set(key, 'back');
    expect(await client.get(key)).toBe('back');
  });
});
