// One process of the race test: on 'go', fires N requests at once on one shared subject, says when all are sent, and reports how many were admitted.
// The clients are loaded when setup names one (each child uses one: loading all four cost each of 8 children about a second).
import type * as Glide from '@valkey/valkey-glide';
import type * as IORedis from 'ioredis';
import type * as IOValkey from 'iovalkey';
import type * as NodeRedis from 'redis';
import { createLimiter, RedisStore, type AlgorithmName, type CoalesceMode, type Limiter, type LimitOptions, type RedisClient } from '../../src';

export interface RaceSetup {
  type: 'setup';
  port: number;
  /** Startup nodes of a Redis Cluster (cluster-race.test.ts): connect to it instead of `port`. */
  cluster?: { host: string; port: number }[];
  /** Which client the child's RedisStore is given. Default 'ioredis'. */
  client?: RaceClient;
  prefix: string;
  limit: number;
  inFlight: number;
}
export interface RaceGo {
  type: 'go';
  round: AlgorithmName | 'naive';
  /**
   * How the child's RedisStore shares script calls: false sends one script call per request (the
   * strictest race: every request is its own script), 'turn' is the default users run.
   */
  coalesce: RaceCoalesce;
  subject: string;
  naiveKey: string;
}
/** 'iovalkey' and 'glide' (Valkey GLIDE) race in valkey-clients.test.ts and cluster-race.test.ts. */
export type RaceClient = 'ioredis' | 'node-redis' | 'iovalkey' | 'glide';
export const RACE_CLIENTS: readonly RaceClient[] = ['ioredis', 'node-redis'];
export type RaceCoalesce = Extract<CoalesceMode, false | 'turn'>;
/** The modes a child has limiters for; each writes under its own prefix, `${prefix}-${mode}`. */
export const RACE_MODES: readonly RaceCoalesce[] = [false, 'turn'];
export const modePrefix = (prefix: string, mode: RaceCoalesce): string => `${prefix}-${mode === false ? 'uncoalesced' : mode}`;
export type RaceReply =
  | { type: 'ready'; pid: number }
  /** Every request of the round has been handed to the Redis client (its calls written to the socket). */
  | { type: 'sent'; pid: number }
  | {
      type: 'done';
      round: string;
      pid: number;
      sent: number;
      admitted: number;
      denied: number;
      /** Degraded decisions or rejected calls: a store failure, never counted as admitted. */
      failed: number;
      /**
       * Times (ms on the machine's monotonic clock, shared by every process: process.hrtime): the first request made,
       * the last one handed to the client (its script call written), the first answer, the last.
       * [lastSentAt, firstReplyAt] is a span in which every request of this process was in flight.
       */
      startedAt: number;
      lastSentAt: number;
      firstReplyAt: number;
      endedAt: number;
    }
  | { type: 'error'; message: string };

const ALGORITHMS: readonly AlgorithmName[] = ['fixed-window', 'sliding-window-log', 'sliding-window-counter', 'token-bucket', 'gcra'];

/** The commands the naive control needs, which both clients spell alike. */
interface ControlCommands {
  get(key: string): Promise<string | null | unknown>;
  incr(key: string): Promise<number | unknown>;
}
let client: RedisClient & ControlCommands;
let closeClient: () => void = () => undefined;
let setup: RaceSetup;
const limiters = new Map<string, Limiter>();
// The machine's monotonic clock (CLOCK_MONOTONIC, in ms), one clock for every process on it: timeOrigin +
// now() is each process's own reading of the wall clock at start, and two processes' differ by more than
// a Redis round trip (a clean-clone run saw 6 in the handler at once where 5 is the in-flight limit).
const now = () => Number(process.hrtime.bigint()) / 1e6;

function send(message: RaceReply): void {
  process.send?.(message);
}

/** `limit` per hour; token-bucket and gcra get burst = limit, refilled 1 per hour: nothing refills during the race. */
function optionsFor(algorithm: AlgorithmName, limit: number): LimitOptions {
  return algorithm === 'token-bucket' || algorithm === 'gcra'
    ? { algorithm, burst: limit, refillPerSecond: 1 / 3600 }
    : { algorithm, limit, windowMs: '1h' };
}

async function onSetup(message: RaceSetup): Promise<void> {
  setup = message;
  if (message.client === 'node-redis') {
    const { createClient, createCluster }: typeof NodeRedis = await import('redis');
    const nodeRedis = message.cluster
      ? createCluster({ rootNodes: message.cluster.map(({ host, port }) => ({ url: `redis://${host}:${port}` })) })
      : createClient({ url: `redis://127.0.0.1:${message.port}` });
    nodeRedis.on('error', () => undefined);
    await nodeRedis.connect();
    client = nodeRedis as unknown as typeof client;
    closeClient = () => void (nodeRedis.isOpen && nodeRedis.destroy());
  } else if (message.client === 'glide') {
    const { GlideClient, GlideClusterClient, Logger: GlideLogger }: typeof Glide = await import('@valkey/valkey-glide');
    GlideLogger.setLoggerConfig('off'); // its core writes to stdout (a warning per NOSCRIPT); the parent reads the results
    const addresses = message.cluster ?? [{ host: '127.0.0.1', port: message.port }];
    const glide = message.cluster
      ? await GlideClusterClient.createClient({ addresses, requestTimeout: 20_000 })
      : await GlideClient.createClient({ addresses, requestTimeout: 20_000 });
    // GLIDE spells the control's commands alike (get, incr).
    client = glide as unknown as typeof client;
    closeClient = () => glide.close();
  } else if (message.client === 'iovalkey') {
    const { Cluster: ValkeyCluster, Redis: Valkey }: typeof IOValkey = await import('iovalkey');
    const valkey = message.cluster
      ? new ValkeyCluster(message.cluster, { retryDelayOnFailover: 0, redisOptions: { autoResendUnfulfilledCommands: false } })
      : new Valkey({ host: '127.0.0.1', port: message.port, autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 1 });
    valkey.on('error', () => undefined);
    await valkey.ping();
    client = valkey as unknown as typeof client;
    closeClient = () => valkey.disconnect();
  } else {
    const { Cluster, Redis }: typeof IORedis = await import('ioredis');
    const ioredis = message.cluster
      ? new Cluster(message.cluster, { retryDelayOnFailover: 0, redisOptions: { autoResendUnfulfilledCommands: false } })
      : new Redis({ host: '127.0.0.1', port: message.port, autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 1 });
    ioredis.on('error', () => undefined);
    await ioredis.ping();
    client = ioredis;
    closeClient = () => ioredis.disconnect();
  }
  // A long timeout: the parent holds Redis stopped (SIGSTOP) until every process has sent its round.
  for (const coalesce of RACE_MODES) {
    const store = new RedisStore({ client, timeoutMs: 20_000, coalesce });
    for (const algorithm of ALGORITHMS) {
      const limiter = createLimiter({
        ...optionsFor(algorithm, message.limit),
        store,
        prefix: modePrefix(message.prefix, coalesce),
        blockCacheSize: 0, // every request goes to Redis
        failMode: 'closed', // a store failure is never an admission
      });
      // Loads the scripts (NOSCRIPT -> EVAL) before the race: a peek's (the lean one), and a lone
      // consume's (the algorithm's one-decision script, which every request of the uncoalesced race
      // uses), the consume under another prefix, whose keys the parent does not count.
      await limiter.peek('warm-up');
      await createLimiter({ ...optionsFor(algorithm, message.limit), store, prefix: `${message.prefix}-warm`, blockCacheSize: 0 }).consume('warm-up');
      limiters.set(`${coalesce}/${algorithm}`, limiter);
    }
  }
  send({ type: 'ready', pid: process.pid });
}

async function onGo(message: RaceGo): Promise<void> {
  let admitted = 0;
  let denied = 0;
  let failed = 0;
  let sent = 0;
  let firstReplyAt = 0;
  const firstReply = () => {
    if (firstReplyAt === 0) firstReplyAt = now();
  };
  const startedAt = now();
  const requests: Promise<void>[] = [];
  if (message.round === 'naive') {
    // The control: GET, compare, INCR in separate round trips, no script, no MULTI.
    for (let i = 0; i < setup.inFlight; i++) {
      sent++;
      requests.push(
        (async () => {
          const count = Number(await client.get(message.naiveKey));
          firstReply();
          if (count < setup.limit) {
            await client.incr(message.naiveKey);
            admitted++;
          } else {
            denied++;
          }
        })().catch(() => {
          failed++;
        }),
      );
    }
  } else {
    const limiter = limiters.get(`${message.coalesce}/${message.round}`)!;
    for (let i = 0; i < setup.inFlight; i++) {
      sent++;
      requests.push(
        limiter.consume(message.subject).then(
          (d) => {
            firstReply();
            if (d.degraded) failed++;
            else if (d.allowed) admitted++;
            else denied++;
          },
          () => {
            firstReply();
            failed++;
          },
        ),
      );
    }
  }
  // Every request is made; wait one turn so that calls sent at the end of the turn ('turn'
  // coalescing sends in a setImmediate queued before this one) are written too.
  await new Promise((resolve) => setImmediate(resolve));
  const lastSentAt = now();
  send({ type: 'sent', pid: process.pid });
  await Promise.all(requests);
  send({ type: 'done', round: message.round, pid: process.pid, sent, admitted, denied, failed, startedAt, lastSentAt, firstReplyAt, endedAt: now() });
}

process.on('message', (message: RaceSetup | RaceGo | { type: 'exit' }) => {
  const handle =
    message.type === 'setup' ? onSetup(message) : message.type === 'go' ? onGo(message) : Promise.resolve(closeClient()).then(() => process.exit(0));
  handle.catch((error: unknown) => send({ type: 'error', message: error instanceof Error ? (error.stack ?? error.message) : String(error) }));
});
process.on('disconnect', () => process.exit(0));
