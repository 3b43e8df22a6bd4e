// Tests for the production-like servers of @floodgate/testing: TLS with a generated CA, a password, ACL users, and a Sentinel topology that fails over.
import { connect } from 'node:net';
import type { Redis } from 'ioredis';
import { startRedis, startRedisSentinel, tlsMaterial, type RedisSentinelHandle, type RedisServer } from './index';

/** What a plain-TCP client hears from a TLS-only port: nothing it can read as RESP (the server waits for a handshake). */
function plainPing(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    let text = '';
    socket.setTimeout(500, () => (socket.destroy(), resolve(text)));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => (text += chunk.toString('latin1')));
    socket.on('error', () => resolve(text));
    socket.on('close', () => resolve(text));
  });
}

describe('startRedis with TLS, a password and ACL users', () => {
  let server: RedisServer;
  const clients: Redis[] = [];
  const track = (c: Redis) => (clients.push(c), c);

  beforeAll(async () => {
    server = await startRedis({ tls: true, users: [{ name: 'limiter', password: 'limiter-pw', rules: '~fg:* -@all +get +ping' }] });
  });
  afterAll(async () => {
    clients.forEach((c) => c.disconnect());
    await server?.stop();
  });

  it('makes a CA and certificates with openssl at run time, and serves TLS only', async () => {
    const tls = tlsMaterial();
    expect(tls.ca).toMatch(/^-----BEGIN CERTIFICATE-----/);
    expect(tls.clientKey).toMatch(/PRIVATE KEY/);
    expect(server.url).toBe(`rediss://127.0.0.1:${server.port}`);
    expect(await plainPing(server.port)).not.toContain('PONG');
    await expect(track(server.client()).ping()).resolves.toBe('PONG');
    // A client that does not trust the test CA is refused by its own TLS check.
    const untrusting = track(server.client({ tls: {}, retryStrategy: () => null, maxRetriesPerRequest: 0 }));
    await expect(untrusting.ping()).rejects.toThrow();
  });

  it('requires the default user to authenticate, and the harness does', async () => {
    expect(server.password).toMatch(/^[0-9a-f]{24}$/);
    const anonymous = track(server.client({ password: undefined, retryStrategy: () => null }));
    await expect(anonymous.ping()).rejects.toThrow(/NOAUTH/);
    expect(String(await server.command(['ACL', 'WHOAMI']))).toBe('default');
    expect(await server.info('server')).toContain(`process_id:${server.pid}`);
  });

  it('creates the ACL users it was given, which keep to their rules', async () => {
    const limiter = track(server.client({ username: 'limiter', password: 'limiter-pw', enableReadyCheck: false }));
    await expect(limiter.ping()).resolves.toBe('PONG');
    await expect(limiter.get('fg:x')).resolves.toBeNull();
    await expect(limiter.get('other:x')).rejects.toThrow(/NOPERM/);
    await expect(limiter.set('fg:x', '1')).rejects.toThrow(/NOPERM/);
    // Restarted, the server still has them (they are in its configuration, not set afterwards).
    await server.restart();
    const again = track(server.client({ username: 'limiter', password: 'limiter-pw', enableReadyCheck: false }));
    await expect(again.get('fg:x')).resolves.toBeNull();
  });
});

describe('startRedisSentinel', () => {
  let topology: RedisSentinelHandle;
  const clients: Redis[] = [];

  beforeAll(async () => {
    topology = await startRedisSentinel();
  }, 60_000);
  afterAll(async () => {
    clients.forEach((c) => c.disconnect());
    await topology?.stop();
  });

  it('starts a master, a replica and three sentinels that agree on the master', async () => {
    expect(topology.servers).toHaveLength(2);
    expect(topology.sentinels).toHaveLength(3);
    expect(topology.master()).toBe(topology.servers[0]);
    const client = topology.client();
    clients.push(client);
    await client.set('k', 'v');
    expect(await client.get('k')).toBe('v');
    expect(await topology.servers[1].info('replication')).toMatch(/master_link_status:up/);
  });

  it('failover() demotes the master (READONLY) and promotes the replica; killMaster() promotes it back', async () => {
    const first = topology.master();
    const graceful = await topology.failover();
    expect(graceful.previous).toBe(first);
    expect(graceful.master).toBe(topology.servers[1]);
    expect(graceful.promotedAt).toBeGreaterThan(graceful.startedAt);
    expect(graceful.announcedAt).toBeGreaterThanOrEqual(graceful.promotedAt);
    // The demoted master is alive and refuses writes.
    const direct = first.client();
    clients.push(direct);
    await expect(direct.set('k', 'x')).rejects.toThrow(/^READONLY/);
    // It catches up with its new master before it can be promoted again.
    await new Promise<void>((resolve, reject) => {
      const deadline = Date.now() + 20_000;
      const check = () =>
        void first.info('replication').then((info) => {
          if (/master_link_status:up/.test(info)) resolve();
          else if (Date.now() > deadline) reject(new Error('the demoted master never synced'));
          else setTimeout(check, 50);
        }, reject);
      check();
    });
    const killed = await topology.killMaster();
    expect(killed.previous).toBe(graceful.master);
    expect(killed.master).toBe(first);
    expect(killed.previous.pid).toBeUndefined();
    const client = topology.client();
    clients.push(client);
    await client.set('k', 'after');
    expect(await client.get('k')).toBe('after');
  }, 60_000);
});
