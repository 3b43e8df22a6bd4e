// Redis's memory policy and roles on real servers: OOM and READONLY as store error kinds of their own, an evicting maxmemory-policy warned about once (and in health), nothing warned when Redis does not evict or forbids CONFIG.
import { createLimiter, RedisStore, type Logger } from '@floodgate/core';
import { pollUntil, startRedis, type RedisServer } from '@floodgate/testing';
import { connectClient, type ClientKind, type ConnectedClient } from './support/redis-clients';

const KINDS: readonly ClientKind[] = ['ioredis 5', 'node-redis'];
const opened: ConnectedClient[] = [];
const servers: RedisServer[] = [];

afterAll(async () => {
  for (const c of opened) await c.close();
  await Promise.all(servers.map((s) => s.stop()));
});

async function server(options: Parameters<typeof startRedis>[0]): Promise<RedisServer> {
  const s = await startRedis(options);
  servers.push(s);
  return s;
}

async function storeOn(kind: ClientKind, s: RedisServer, auth?: Parameters<typeof connectClient>[2]): Promise<RedisStore> {
  const connected = await connectClient(kind, s, auth);
  opened.push(connected);
  return new RedisStore({ client: connected.client, timeoutMs: 2_000 });
}

function recordingLogger(): Logger & { warnings: string[]; errors: string[] } {
  const warnings: string[] = [];
  const errors: string[] = [];
  return { warnings, errors, warn: (m) => void warnings.push(m), error: (m) => void errors.push(m) };
}

const prefix = () => `mr${Math.random().toString(36).slice(2, 8)}`;

/** Waits for the store's one CONFIG GET (sent after its first answer) to be read. */
const policyRead = (store: RedisStore) => pollUntil(async () => store.memoryPolicy, { timeoutMs: 5_000, what: 'the maxmemory-policy check' });

describe.each(KINDS)('on %s', (kind) => {
  it("OOM under maxmemory with noeviction is kind 'oom', and its message names the fix", async () => {
    const s = await server({ args: ['--maxmemory', '1', '--maxmemory-policy', 'noeviction'] });
    const logger = recordingLogger();
    const limiter = createLimiter({ store: await storeOn(kind, s), prefix: prefix(), limit: 10, windowMs: '1m', failMode: 'closed', logger });
    const decision = await limiter.consume('a');
    expect(decision).toMatchObject({ allowed: false, degraded: true, reason: 'fail-closed' });
    const health = limiter.health({ detail: true }).stores[0];
    expect(health.errors).toMatchObject({ oom: 1, other: 0 });
    expect(health.lastError?.kind).toBe('oom');
    expect(health.lastError?.message).toMatch(/^Redis refused the script \(OOM command not allowed/);
    expect(health.lastError?.message).toContain('Raise maxmemory or give rate-limit state a Redis of its own');
    expect(health.lastError?.message).toContain('[FG_STORE_OOM]');
    // The log line names it too, as the first failed call of the outage.
    expect(logger.errors[0]).toContain('OOM command not allowed');
    // maxmemory is set but the policy does not evict: nothing warned.
    expect(logger.warnings.filter((w) => w.includes('maxmemory-policy'))).toEqual([]);
  });

  it("a script sent to a replica answers READONLY: kind 'readonly', naming Sentinel and the Cluster client", async () => {
    const master = await server({});
    const replica = await server({ args: ['--replicaof', master.host, String(master.port)] });
    const limiter = createLimiter({ store: await storeOn(kind, replica), prefix: prefix(), limit: 10, windowMs: '1m', failMode: 'closed', logger: recordingLogger() });
    expect(await limiter.consume('a')).toMatchObject({ allowed: false, reason: 'fail-closed' });
    const health = limiter.health({ detail: true }).stores[0];
    expect(health.errors).toMatchObject({ readonly: 1, other: 0 });
    expect(health.lastError?.message).toMatch(/READONLY You can't write against a read only replica/);
    expect(health.lastError?.message).toContain('Connect through Sentinel or the Cluster client');
  });

  it("an evicting maxmemory-policy is warned about once, with what to set instead, and shown in health", async () => {
    const s = await server({ args: ['--maxmemory', '64mb', '--maxmemory-policy', 'allkeys-lru'] });
    const store = await storeOn(kind, s);
    const logger = recordingLogger();
    // Two limiters on one store: the warning is the store's, logged once.
    const a = createLimiter({ store, prefix: prefix(), limit: 10, windowMs: '1m', logger });
    const b = createLimiter({ store, prefix: prefix(), limit: 10, windowMs: '1m', logger });
    expect(await a.consume('x')).toMatchObject({ allowed: true, degraded: false });
    expect(await policyRead(store)).toEqual({ policy: 'allkeys-lru', maxmemory: 64 * 1024 * 1024, evicts: true });
    await b.consume('x');
    const evictionWarnings = logger.warnings.filter((w) => w.includes('maxmemory-policy'));
    expect(evictionWarnings).toHaveLength(1);
    expect(evictionWarnings[0]).toMatch(/^\[floodgate\] RedisStore: Redis's maxmemory-policy is 'allkeys-lru'/);
    expect(evictionWarnings[0]).toContain("Set maxmemory-policy to 'noeviction'");
    expect(a.health({ detail: true }).stores[0].warnings).toEqual([expect.stringContaining("maxmemory-policy is 'allkeys-lru'")]);
  });

  it('nothing is warned on a Redis that does not evict (noeviction, or no maxmemory), nor when CONFIG is forbidden or renamed', async () => {
    const cases = [
      { label: 'noeviction', options: { args: ['--maxmemory', '64mb', '--maxmemory-policy', 'noeviction'] }, policy: { policy: 'noeviction', maxmemory: 64 * 1024 * 1024, evicts: false } },
      { label: 'allkeys-lru without maxmemory', options: { args: ['--maxmemory-policy', 'allkeys-lru'] }, policy: { policy: 'allkeys-lru', maxmemory: 0, evicts: false } },
      { label: 'CONFIG renamed', options: { args: ['--maxmemory', '64mb', '--maxmemory-policy', 'allkeys-lru', '--rename-command', 'CONFIG', ''] }, policy: { unknown: expect.stringMatching(/unknown command/i) } },
      {
        label: 'CONFIG forbidden by the ACL',
        options: { args: ['--maxmemory', '64mb', '--maxmemory-policy', 'allkeys-lru'], users: [{ name: 'lim', password: 'pw', rules: '~* -@all +evalsha +eval +time +hmget +hset +pexpire +ping' }] },
        auth: { username: 'lim', password: 'pw' },
        policy: { unknown: expect.stringMatching(/NOPERM/) },
      },
    ];
    for (const c of cases) {
      const s = await server(c.options);
      const store = await storeOn(kind, s, c.auth);
      const logger = recordingLogger();
      const limiter = createLimiter({ store, prefix: prefix(), limit: 10, windowMs: '1m', logger });
      expect({ label: c.label, decision: await limiter.consume('x') }).toMatchObject({ label: c.label, decision: { allowed: true, degraded: false } });
      expect({ label: c.label, policy: await policyRead(store) }).toEqual({ label: c.label, policy: c.policy });
      expect({ label: c.label, warnings: logger.warnings, health: limiter.health({ detail: true }).stores[0].warnings }).toEqual({ label: c.label, warnings: [], health: undefined });
    }
  });
});
