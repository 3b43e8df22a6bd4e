// Redis over HTTP: a client in @upstash/redis's shape (evalsha(sha, keys, args), eval, scriptLoad) bound to the protocol's one seam; a turn's script calls leave as one pipelined request.
import type { ClientBinding } from './clients';
import type { SendCommand, SentArgs } from './protocol';

/** What RedisStore uses of an HTTP pipeline (@upstash/redis's `redis.pipeline()`): queued commands, one request. */
export interface HttpRedisPipeline {
  evalsha(sha: string, keys: string[], args: string[]): unknown;
  exec(options: { keepErrors: true }): Promise<readonly { readonly error?: string; readonly result: unknown }[]>;
}

/**
 * What RedisStore uses of an HTTP Redis client, written out so that the published types need no
 * @upstash/redis types: `new Redis({ url, token })` from `@upstash/redis` (its `/cloudflare` and
 * `/fastly` entries too), or any client of that shape.
 */
export interface HttpRedisClient {
  evalsha(sha: string, keys: string[], args: string[]): Promise<unknown>;
  eval(script: string, keys: string[], args: string[]): Promise<unknown>;
  /** SCRIPT LOAD: what tells an HTTP client from ioredis (whose `evalsha` takes a key count) by shape. */
  scriptLoad(script: string): Promise<string>;
  del(...keys: string[]): Promise<number>;
  /** Several commands in one HTTP request; without it, each call is a request of its own. */
  pipeline?(): HttpRedisPipeline;
  time?(): Promise<unknown>;
  zadd?(key: string, member: { score: number; member: string }): Promise<unknown>;
  zremrangebyscore?(key: string, min: string | number, max: string | number): Promise<unknown>;
  zcard?(key: string): Promise<unknown>;
  pexpire?(key: string, ms: number): Promise<unknown>;
  hset?(key: string, fields: Record<string, string>): Promise<unknown>;
  hvals?(key: string): Promise<unknown>;
  hdel?(key: string, ...fields: string[]): Promise<unknown>;
  set?(key: string, value: string, options?: { px: number }): Promise<unknown>;
  /** ZRANGE (and BYSCORE with `{ byScore: true }`); typed loosely: @upstash/redis's own signature is a union of argument lists. */
  zrange?: unknown;
  zrem?(key: string, ...members: string[]): Promise<unknown>;
}

type Shape = Record<string, unknown>;
const isFunction = (value: unknown): boolean => typeof value === 'function';

/** An HTTP client: `evalsha`, `eval` and `scriptLoad`, and no `call` nor `sendCommand` (ioredis has both, and no scriptLoad). */
export function isHttpRedis(value: unknown): value is HttpRedisClient {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Shape;
  return isFunction(v.evalsha) && isFunction(v.eval) && isFunction(v.scriptLoad) && !isFunction(v.call) && !isFunction(v.sendCommand);
}

/** EVALSHA's (EVAL's) arguments as the HTTP client takes them: the head, the keys, the ARGV as strings (what Redis receives anyway). */
function split(args: SentArgs): [head: string, keys: string[], argv: string[]] {
  // A number, or its string (a kept call's arguments are all strings: protocol.ts LONE).
  const numKeys = Number(args[1]);
  const keys = new Array<string>(numKeys);
  for (let i = 0; i < numKeys; i++) keys[i] = String(args[2 + i]);
  const argv = new Array<string>(args.length - 2 - numKeys);
  for (let i = 0; i < argv.length; i++) argv[i] = String(args[2 + numKeys + i]);
  return [args[0], keys, argv];
}

/**
 * @upstash/redis puts its own words before the server's ('Command failed: NOSCRIPT ...'): the
 * protocol's NOSCRIPT path needs the server's word first, as the TCP clients give it.
 */
function serverWordFirst(error: unknown): never {
  if (error instanceof Error && /\bNOSCRIPT\b/.test(error.message) && !error.message.startsWith('NOSCRIPT')) {
    throw Object.assign(new Error(`NOSCRIPT ${error.message}`), { cause: error });
  }
  throw error;
}

/** An EVALSHA held for the turn's pipeline. */
interface Held {
  readonly args: SentArgs;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/**
 * The plain commands the fleet count sends (RedisStore.announce and peers), through the client's
 * typed methods: an HTTP client has no raw command. Undefined for a command it lacks.
 */
type AnyCall = (...args: unknown[]) => Promise<unknown>;

function plain(client: HttpRedisClient, args: string[]): Promise<unknown> | undefined {
  const [name, key, ...rest] = args;
  switch (name) {
    case 'TIME':
      return client.time?.();
    case 'ZADD':
      return client.zadd?.(key, { score: Number(rest[0]), member: rest[1] });
    case 'ZREMRANGEBYSCORE':
      return client.zremrangebyscore?.(key, rest[0], rest[1]);
    case 'ZCARD':
      return client.zcard?.(key);
    case 'PEXPIRE':
      return client.pexpire?.(key, Number(rest[0]));
    case 'HSET':
      return client.hset?.(key, { [rest[0]]: rest[1] });
    case 'HVALS':
      return client.hvals?.(key);
    case 'HDEL':
      return client.hdel?.(key, ...rest);
    // An override (limiter.override: SET key value PX ms) and its clearing.
    case 'SET':
      return rest[1]?.toUpperCase() === 'PX' ? client.set?.(key, rest[0], { px: Number(rest[2]) }) : client.set?.(key, rest[0]);
    case 'DEL':
      return client.del(key, ...rest);
    // The overrides' index (limiter.overrides()).
    case 'ZRANGE':
      return isFunction(client.zrange) ? (client.zrange as AnyCall).call(client, key, Number(rest[0]), Number(rest[1])) : undefined;
    case 'ZRANGEBYSCORE':
      return isFunction(client.zrange) ? (client.zrange as AnyCall).call(client, key, rest[0], rest[1], { byScore: true }) : undefined;
    case 'ZREM':
      return client.zrem?.(key, ...rest);
    default:
      return undefined;
  }
}

/**
 * What in the client's own setup can count one request twice: @upstash/redis retries a request
 * whose fetch failed (5 times by default), and a request that reached the server before its
 * connection failed has already run its script. Read from the client's public `client.retry`.
 */
function httpWarnings(client: HttpRedisClient): string[] {
  const attempts = (client as { client?: { retry?: { attempts?: number } } }).client?.retry?.attempts;
  if (attempts === undefined || attempts === 0) return [];
  return [
    `RedisStore: the HTTP Redis client retries a failed request (up to ${attempts} more times), so a script the server ` +
      'already ran before the connection failed can run again and count one request twice. Create it with ' +
      "{ retry: { retries: 0 } } (@upstash/redis 1.x's retry: false still retries once; see docs/edge.md#redis-over-http).",
  ];
}

/**
 * The binding. `batch`: the EVALSHAs sent inside it are held and leave as one pipeline request
 * (`/pipeline`: each script still runs on its own, atomically, in order), each answered with its
 * own entry; a NOSCRIPT entry takes the protocol's EVAL fallback for its call alone.
 */
export function httpBinding(client: HttpRedisClient): ClientBinding {
  let held: Held[] | undefined;
  const send: SendCommand = (command, args) => {
    if (held && command === 'EVALSHA' && isFunction(client.pipeline)) {
      return new Promise((resolve, reject) => held!.push({ args, resolve, reject }));
    }
    const [head, keys, argv] = split(args);
    return (command === 'EVALSHA' ? client.evalsha(head, keys, argv) : client.eval(head, keys, argv)).catch(serverWordFirst);
  };
  const flush = (calls: Held[]): void => {
    if (calls.length === 1) {
      const [head, keys, argv] = split(calls[0].args);
      client.evalsha(head, keys, argv).catch(serverWordFirst).then(calls[0].resolve, calls[0].reject);
      return;
    }
    const pipeline = client.pipeline!();
    for (const call of calls) pipeline.evalsha(...split(call.args));
    pipeline.exec({ keepErrors: true }).then(
      (entries) => {
        calls.forEach((call, i) => {
          const entry = entries[i];
          if (!entry) call.reject(new Error('ERR the pipeline reply is shorter than the pipeline'));
          else if (entry.error !== undefined && entry.error !== null) call.reject(new Error(String(entry.error)));
          else call.resolve(entry.result);
        });
      },
      (error: unknown) => calls.forEach((call) => call.reject(error)),
    );
  };
  const keyed = (_key: string, args: string[]): Promise<unknown> =>
    plain(client, args) ?? Promise.reject(new Error(`The HTTP Redis client has no method for ${args[0]}.`));
  return {
    send,
    del: (key) => client.del(key),
    // CONFIG GET is refused by hosted HTTP services; the memory-policy check then says it could not read it.
    command: undefined,
    keyed,
    // Each request opens (or reuses) its own HTTP connection: nothing is queued offline.
    unavailable: () => undefined,
    warnings: httpWarnings(client),
    cluster: false,
    batch(sendAll) {
      const calls: Held[] = [];
      held = calls;
      try {
        sendAll();
      } finally {
        held = undefined;
      }
      if (calls.length > 0) flush(calls);
    },
  };
}
