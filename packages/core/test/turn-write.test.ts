// One turn's script calls for different subjects leave in ONE socket write, and Redis reads them in one go:
// counted on the client (ioredis: the socket's writes) and on a real redis-server (INFO stats total_reads_processed).
import { startRedis, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import { createLimiter, RedisStore, type CoalesceMode } from '../src';
import { CLIENT_KINDS, connectClient, kindTag, type ClientKind, type ConnectedClient } from './support/redis-clients';
import { countWrites } from './support/socket-writes';

const SUBJECTS = 20;
let server: RedisServer;
let admin: Redis;

beforeAll(async () => {
  server = await startRedis();
  admin = server.client();
});
afterAll(async () => {
  admin?.disconnect();
  await server?.stop();
});

/** Read events the server has processed so far (every connection; this INFO's own read included). */
async function readsProcessed(): Promise<number> {
  const info = await admin.info('stats');
  return Number(/^total_reads_processed:(\d+)/m.exec(info)![1]);
}

async function turnOfSubjects(connected: ConnectedClient, kind: ClientKind, coalesce: CoalesceMode) {
  const prefix = `tw${kindTag(kind)}${coalesce === false ? 'f' : 't'}${Math.random().toString(36).slice(2, 8)}`;
  const limiter = createLimiter({
    store: new RedisStore({ client: connected.client, coalesce, timeoutMs: 5_000 }),
    prefix,
    algorithm: 'sliding-window-counter',
    limit: 10,
    windowMs: '1m',
    blockCacheSize: 0,
    // A fixed count: this test counts the connection's writes and Redis's reads, and a learned count's announcements are both.
    instances: 1,
  });
  // The scripts are loaded (a first EVALSHA meets NOSCRIPT and EVAL follows) before anything is
  // counted: a call of one decision goes to its one-decision script, a turn of several subjects to
  // the lean one, so a lone consume and then two in one turn.
  await limiter.consume('warm-up');
  await Promise.all([limiter.consume('warm-up-a'), limiter.consume('warm-up-b')]);
  const writes = kind === 'node-redis' ? undefined : countWrites(connected.client);
  try {
    await server.resetStats();
    const before = await readsProcessed();
    const decisions = await Promise.all(Array.from({ length: SUBJECTS }, (_, i) => limiter.consume(`subject-${i}`)));
    // Less this INFO's own read.
    const reads = (await readsProcessed()) - before - 1;
    const calls = (await server.commandStats()).evalsha;
    return { decisions, reads, calls, writes: writes?.count };
  } finally {
    writes?.restore();
  }
}

describe.each(CLIENT_KINDS)('%s', (kind) => {
  let connected: ConnectedClient;
  beforeAll(async () => {
    connected = await connectClient(kind, server);
  });
  afterAll(async () => {
    await connected?.close();
  });

  it(`sends one turn's decisions for ${SUBJECTS} subjects in one call and one write, which Redis reads at once`, async () => {
    const { decisions, reads, calls, writes } = await turnOfSubjects(connected, kind, 'turn');
    expect(decisions.every((d) => d.allowed && d.remaining === 9)).toBe(true);
    // One script call for the turn: the subjects' decisions share it (each subject its own group).
    expect(calls).toBe(1);
    if (writes !== undefined) expect(writes).toBe(1);
    // One write arrives whole on loopback (about 3 KB); 2 leaves room for the kernel splitting it.
    expect(reads).toBeLessThanOrEqual(2);
  });

  if (kind !== 'node-redis') {
    it('the count tells: without coalescing, each call is its own write', async () => {
      const { decisions, calls, writes } = await turnOfSubjects(connected, kind, false);
      expect(decisions.every((d) => d.allowed)).toBe(true);
      expect(calls).toBe(SUBJECTS);
      expect(writes).toBe(SUBJECTS);
    });
  }
});
