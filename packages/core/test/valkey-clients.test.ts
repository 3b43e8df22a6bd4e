// The Valkey clients on a real redis-server: iovalkey and Valkey GLIDE (GlideClient), recognised by shape, run the conformance suite, the race (8 processes x 400 in flight, limit 100, exact) and the kill and pause faults.
import type { ChildProcess } from 'node:child_process';
import { GlideClient, Logger as GlideLogger } from '@valkey/valkey-glide';
import { startRedis, type RedisServer } from '@floodgate/testing';
import { Redis as Valkey } from 'iovalkey';
import { createLimiter, RedisStore, type AlgorithmName, type RedisClient } from '../src';
import { watchExpiry, type ExpiryWatch } from './conformance/expiry-watch';
import { describeConformance } from './conformance/scenarios';
import { threeRoutesThrough } from './support/fault-routes';
import { modePrefix, type RaceCoalesce, type RaceReply, type RaceSetup } from './race/race-child';
import { allInFlightTogether, inFlightTogetherMs, raceRound, startChildren, stopChildren, TURN_BATCH } from './race/race-harness';

type Kind = 'iovalkey' | 'glide';
const KINDS: readonly Kind[] = ['iovalkey', 'glide'];
const PROCESSES = 8;
const IN_FLIGHT = 400;
const LIMIT = 100;
const ALGORITHMS: readonly AlgorithmName[] = ['fixed-window', 'sliding-window-log', 'sliding-window-counter', 'token-bucket', 'gcra'];
const run = Math.random().toString(36).slice(2, 8);

// GLIDE's core logs to stdout itself, past Jest's console (a warning per NOSCRIPT, per fault): what
// these tests check is in their assertions, so its log stays off.
GlideLogger.setLoggerConfig('off');

let server: RedisServer;
let expiry: ExpiryWatch | undefined;
const closers: (() => Promise<void> | void)[] = [];

beforeAll(async () => {
  server = await startRedis();
  expiry = await watchExpiry(server);
}, 30_000);
afterAll(async () => {
  expiry?.close();
  for (const close of closers) await close();
  await server?.stop();
});

/** A connected client of this kind: iovalkey as docs/failure-modes.md asks of ioredis (no resend); GLIDE with a request timeout above the store's. */
async function connect(kind: Kind): Promise<RedisClient> {
  if (kind === 'iovalkey') {
    const client = new Valkey({ host: server.host, port: server.port, autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 1, retryStrategy: (times: number) => Math.min(times * 50, 500) });
    client.on('error', () => undefined);
    await client.ping();
    closers.push(() => client.disconnect());
    return client;
  }
  const client = await GlideClient.createClient({ addresses: [{ host: server.host, port: server.port }], requestTimeout: 5_000 });
  closers.push(() => client.close());
  return client as unknown as RedisClient;
}

describe.each(KINDS)('%s', (kind) => {
  let client: RedisClient;
  beforeAll(async () => void (client = await connect(kind)));

  it('is recognised by shape (never by class name) and decides', async () => {
    const limiter = createLimiter({ store: new RedisStore({ client, timeoutMs: 2_000 }), prefix: `vk-${kind}-${run}`, limit: 2, windowMs: '1m', failMode: 'closed' });
    const answers = [await limiter.consume('a'), await limiter.consume('a'), await limiter.consume('a')];
    expect(answers.map((d) => [d.allowed, d.degraded])).toEqual([[true, false], [true, false], [false, false]]);
  });

  describeConformance('conformance', (clock) => new RedisStore({ client, timeoutMs: 5_000, UNSAFE_testClock: clock }), { prefix: `vkc-${kind}-${run}`, expiry: () => expiry });
});

describe.each(KINDS)('race on %s', (kind) => {
  const children: ChildProcess[] = [];
  const prefix = `vkr-${kind}-${run}`;
  beforeAll(async () => {
    const setup: RaceSetup = { type: 'setup', port: server.port, client: kind, prefix, limit: LIMIT, inFlight: IN_FLIGHT };
    children.push(...(await startChildren(PROCESSES, setup)));
  }, 120_000);
  afterAll(() => stopChildren(children));

  it.each([
    [false, PROCESSES * IN_FLIGHT],
    ['turn', PROCESSES * Math.ceil(IN_FLIGHT / TURN_BATCH)],
  ] as [RaceCoalesce, number][])(`${PROCESSES} processes x ${IN_FLIGHT} in flight at once on one subject, coalesce %s: each algorithm admits exactly ${LIMIT}`, async (coalesce, scriptCalls) => {
    const own = modePrefix(prefix, coalesce);
    const check = new RedisStore({ client: await connect('iovalkey'), timeoutMs: 5_000 });
    const rounds: Record<string, unknown> = {};
    for (const round of ALGORITHMS) {
      await server.resetStats();
      const done: Extract<RaceReply, { type: 'done' }>[] = await raceRound(children, { type: 'go', round, coalesce, subject: 'one-subject', naiveKey: `${own}:unused` }, server);
      const stats = await server.commandStats();
      const sum = (pick: (d: (typeof done)[number]) => number) => done.reduce((total, d) => total + pick(d), 0);
      const summary = { round, admitted: sum((d) => d.admitted), denied: sum((d) => d.denied), failed: sum((d) => d.failed), evalsha: stats.evalsha ?? 0, eval: stats.eval ?? 0 };
      rounds[round] = { ...summary, inFlightTogetherMs: Number(inFlightTogetherMs(done).toFixed(2)) };
      expect(summary).toEqual({ round, admitted: LIMIT, denied: PROCESSES * IN_FLIGHT - LIMIT, failed: 0, evalsha: scriptCalls, eval: 0 });
      // Behind the checked barrier, each process had its first answer after its own last send
      // (its own clock); when not, each one's last send and first answer show which.
      const together = allInFlightTogether(done) || done.map((d) => ({ lastSentAt: d.lastSentAt, firstReplyAt: d.firstReplyAt }));
      expect({ round, together }).toEqual({ round, together: true });
      const tokens = round === 'token-bucket' || round === 'gcra';
      const peek = await createLimiter({ store: check, prefix: own, algorithm: round, ...(tokens ? { burst: LIMIT, refillPerSecond: 1 / 3600 } : { limit: LIMIT, windowMs: '1h' }), blockCacheSize: 0, failMode: 'closed' }).peek('one-subject');
      expect({ round, remaining: peek.remaining, degraded: peek.degraded }).toEqual({ round, remaining: 0, degraded: false });
    }
    if (process.env.FLOODGATE_PRINT_MEASUREMENTS) console.log(`race (${kind}, coalesce ${coalesce}): ${JSON.stringify(rounds)}`);
  }, 120_000);
});

describe.each(KINDS)('faults on %s', (kind) => {
  it('killed under steady load: open serves, closed refuses, local limits its share; restarted: limiting resumes', async () => {
    await threeRoutesThrough('kill', server, await connect(kind), `vkf-${kind}-${run}`);
  }, 60_000);

  it('paused (SIGSTOP) under steady load: the same, seen at the deadline; resumed: limiting resumes', async () => {
    await threeRoutesThrough('pause', server, await connect(kind), `vkp-${kind}-${run}`);
  }, 60_000);
});
