// Over TLS (a CA made at run time), as the default user with a password and as a user holding exactly aclRule({ prefix }), on ioredis and node-redis: the conformance suite, kill and pause failure cases, and that user refused outside the rule.
import { aclRule, createLimiter, RedisStore, type Limiter, type Logger } from '@floodgate/core';
import { failOnUnhandledErrors, startRedis, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import { describeConformance } from './conformance/scenarios';
import { threeRoutesThrough } from './support/fault-routes';
import { connectClient, kindTag, type ClientAuth, type ClientKind, type ConnectedClient } from './support/redis-clients';

const KINDS: readonly ClientKind[] = ['ioredis 5', 'node-redis'];
/** The least-privileged user's only prefix. */
const PREFIX = 'fgacl';
const LIMITER: ClientAuth = { username: 'limiter', password: 'limiter-secret' };
/** The rule the issue found natural and insufficient: scripts run TIME and each algorithm's reads and writes, which it does not grant. */
const NATURAL: ClientAuth = { username: 'natural', password: 'natural-secret' };
const NO_EVALSHA: ClientAuth = { username: 'noevalsha', password: 'noevalsha-secret' };

let server: RedisServer;
let admin: Redis;
const opened: ConnectedClient[] = [];
failOnUnhandledErrors();

beforeAll(async () => {
  server = await startRedis({
    tls: true,
    users: [
      { name: LIMITER.username, password: LIMITER.password, rules: aclRule({ prefix: PREFIX }) },
      { name: NATURAL.username, password: NATURAL.password, rules: `~${PREFIX}:* -@all +evalsha +eval +script|load +ping` },
      { name: NO_EVALSHA.username, password: NO_EVALSHA.password, rules: aclRule({ prefix: PREFIX }).replace(' +evalsha', '') },
    ],
  });
  admin = server.client();
}, 30_000);

afterAll(async () => {
  for (const c of opened) await c.close();
  admin?.disconnect();
  await server?.stop();
});

async function connect(kind: ClientKind, auth?: ClientAuth): Promise<ConnectedClient> {
  const connected = await connectClient(kind, server, auth);
  opened.push(connected);
  return connected;
}

/** Deletes this prefix's keys (SCAN + DEL as the admin: no FLUSH). */
async function clear(prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await admin.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await admin.del(...keys);
  } while (cursor !== '0');
}

it('the user holds exactly the rule aclRule printed, over TLS', async () => {
  const list = (await server.command(['ACL', 'LIST'])) as Buffer[];
  const line = list.map(String).find((l) => l.startsWith(`user ${LIMITER.username} `))!;
  const tokens = new Set(line.split(' '));
  for (const token of aclRule({ prefix: PREFIX }).split(' ').filter((t) => t.startsWith('+') || t.startsWith('~'))) expect(tokens).toContain(token);
  expect(line).toMatch(/ -@all /);
  expect(server.url.startsWith('rediss://')).toBe(true);
});

describe.each(KINDS)('on %s over TLS', (kind) => {
  describe('as the default user with a password', () => {
    let connected: ConnectedClient;
    beforeAll(async () => void (connected = await connect(kind)));
    describeConformance('conformance', (clock) => new RedisStore({ client: connected.client, timeoutMs: 5_000, UNSAFE_testClock: clock }), {
      prefix: `tlspw-${kindTag(kind)}`,
    });
  });

  describe('as a user with exactly aclRule({ prefix })', () => {
    let connected: ConnectedClient;
    beforeAll(async () => void (connected = await connect(kind, LIMITER)));
    describeConformance('conformance', (clock) => new RedisStore({ client: connected.client, timeoutMs: 5_000, UNSAFE_testClock: clock }), {
      sharedPrefix: { prefix: PREFIX, clear: () => clear(PREFIX) },
    });
  });
});

describe.each(KINDS)('the fleet announcement on %s, TLS and the least-privileged user', (kind) => {
  it('counts this instance: the rule grants its commands on the prefix', async () => {
    const { client } = await connect(kind, LIMITER);
    const limiter = createLimiter({ store: new RedisStore({ client, timeoutMs: 2_000, announceMs: 200 }), prefix: PREFIX, limit: 5, windowMs: '1m', logger: { warn() {}, error() {} } });
    const until = Date.now() + 10_000;
    while (!limiter.health().fleets?.[0]?.learnedAt && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    // failures: an announcement may pass its bound (min(announceMs, 5 s)) on a loaded machine; learning the count is what is checked.
    expect(limiter.health().fleets).toEqual([{ prefix: PREFIX, instances: 1, source: 'learned', learned: true, learnedAt: expect.any(String), failures: expect.any(Number) }]);
    expect(await admin.zcard(`${PREFIX}.instances`)).toBe(1);
  });
});

describe.each(KINDS)('failure cases on %s, TLS and the least-privileged user', (kind) => {
  it('killed under steady load: open serves, closed refuses, local limits; restarted (same TLS and users): limiting resumes', async () => {
    const { client } = await connect(kind, LIMITER);
    await threeRoutesThrough('kill', server, client, PREFIX);
  }, 60_000);

  it('paused (SIGSTOP) under steady load: the same, seen at the deadline; resumed: limiting resumes', async () => {
    const { client } = await connect(kind, LIMITER);
    await threeRoutesThrough('pause', server, client, PREFIX);
  }, 60_000);
});

describe.each(KINDS)('refused outside the rule, on %s', (kind) => {
  const deny = (limiter: Limiter) => limiter.consume('x');
  const logger = (): Logger & { lines: string[] } => {
    const lines: string[] = [];
    return { lines, warn: (m) => void lines.push(m), error: (m) => void lines.push(m) };
  };

  it("a key outside the prefix: kind 'noperm', the message names the rule for that prefix", async () => {
    const { client } = await connect(kind, LIMITER);
    const log = logger();
    const limiter = createLimiter({ store: new RedisStore({ client, timeoutMs: 2_000 }), prefix: 'elsewhere', limit: 5, windowMs: '1m', failMode: 'closed', logger: log });
    expect(await deny(limiter)).toMatchObject({ allowed: false, degraded: true, reason: 'fail-closed' });
    const health = limiter.health({ detail: true }).stores[0];
    expect(health.errors).toMatchObject({ noperm: 1, other: 0 });
    expect(health.lastError?.message).toMatch(/^Redis refused the script \(NOPERM/);
    expect(health.lastError?.message).toContain(`ACL SETUSER <user> ${aclRule({ prefix: 'elsewhere' })}`);
    expect(log.lines[0]).toContain(aclRule({ prefix: 'elsewhere' }));
    // Inside the prefix, the same client decides.
    const inside = createLimiter({ store: new RedisStore({ client, timeoutMs: 2_000 }), prefix: PREFIX, limit: 5, windowMs: '1m', failMode: 'closed', logger: log });
    expect(await inside.consume(`in-${kindTag(kind)}`)).toMatchObject({ allowed: true, degraded: false });
  });

  it("a command outside the rule: the natural rule (no TIME, no reads or writes for the scripts) and one without EVALSHA are kind 'noperm', not 'other'", async () => {
    for (const auth of [NATURAL, NO_EVALSHA]) {
      const { client } = await connect(kind, auth);
      const limiter = createLimiter({ store: new RedisStore({ client, timeoutMs: 2_000 }), prefix: PREFIX, limit: 5, windowMs: '1m', failMode: 'closed', logger: logger() });
      expect({ user: auth.username, decision: await deny(limiter) }).toMatchObject({ user: auth.username, decision: { allowed: false, reason: 'fail-closed' } });
      const health = limiter.health({ detail: true }).stores[0];
      expect({ user: auth.username, errors: health.errors }).toMatchObject({ user: auth.username, errors: { noperm: 1, other: 0 } });
      expect(health.lastError?.message).toContain(`Grant it exactly the least-privilege rule: ACL SETUSER <user> ${aclRule({ prefix: PREFIX })}`);
    }
    // The least-privileged user itself cannot run what the rule leaves out.
    const { client } = await connect(kind, LIMITER);
    const raw = kind === 'node-redis' ? (args: string[]) => (client as { sendCommand(a: string[]): Promise<unknown> }).sendCommand(args) : (args: string[]) => (client as Redis).call(args[0], ...args.slice(1));
    await expect(raw(['HGETALL', `${PREFIX}:x`])).rejects.toThrow(/NOPERM/);
    await expect(raw(['GET', 'elsewhere:x'])).rejects.toThrow(/NOPERM/);
    await expect(raw(['CONFIG', 'GET', 'maxmemory'])).rejects.toThrow(/NOPERM/);
    await expect(raw(['FLUSHALL'])).rejects.toThrow(/NOPERM/);
  });
});
