// The Redis clients RedisStore speaks to, recognised by shape (ioredis and iovalkey Redis/Cluster, node-redis client/cluster, Valkey GLIDE client/cluster), each bound to the protocol's one seam.
import type { EvalArgs, SendCommand, SentArgs } from './protocol';

/**
 * What RedisStore uses of an ioredis `Redis` or `Cluster`, written out so that the published types
 * need no ioredis types (an app that only uses the memory store compiles without ioredis).
 */
export interface IoredisClient {
  evalsha(sha: string, numKeys: number, ...keysAndArgs: (string | number)[]): Promise<unknown>;
  eval(script: string, numKeys: number, ...keysAndArgs: (string | number)[]): Promise<unknown>;
  /** evalsha and eval whose reply is left as Redis sent it (bulk strings as Buffers): no conversion pass over the reply. */
  evalshaBuffer?(sha: string, numKeys: number, ...keysAndArgs: (string | number)[]): Promise<unknown>;
  evalBuffer?(script: string, numKeys: number, ...keysAndArgs: (string | number)[]): Promise<unknown>;
  del(...keys: string[]): Promise<number>;
  /** Any command (ioredis's `call`): RedisStore reads `CONFIG GET maxmemory*` with it once. */
  call?(command: string, ...args: (string | number)[]): Promise<unknown>;
  /** ioredis's connection status ('ready', 'reconnecting', 'end', ...). */
  readonly status?: string;
  once?(event: 'ready', listener: () => void): unknown;
  /** `Redis`: its socket (ioredis writes a command to it synchronously when connected). */
  readonly stream?: unknown;
  /** `Cluster`: its node clients, each with its own `stream`. */
  nodes?(): readonly { readonly stream?: unknown }[];
}

/** What RedisStore uses of a node-redis (`redis` v5 and v6) `createClient()`, written out likewise. */
export interface NodeRedisClient {
  sendCommand(args: string[]): Promise<unknown>;
  /** Connected or connecting: `client.connect()` was called and `quit()`/`close()` was not. */
  readonly isOpen: boolean;
  /** Connected, and a command is written now rather than held in the offline queue. */
  readonly isReady: boolean;
  once?(event: 'ready', listener: () => void): unknown;
}

/** What RedisStore uses of a node-redis `createCluster()`: commands routed by their first key. */
export interface NodeRedisCluster {
  sendCommand(firstKey: string | undefined, isReadonly: boolean | undefined, args: string[]): Promise<unknown>;
  readonly isOpen: boolean;
  readonly isReady?: boolean;
  /** The cluster's master nodes: what tells a cluster from a single client by shape. */
  readonly masters: readonly unknown[];
}

/**
 * What RedisStore uses of a node-redis `createSentinel()`: commands go to the master its sentinels
 * name (`isReadonly` false), and it follows a failover by itself.
 */
export interface NodeRedisSentinel {
  sendCommand(isReadonly: boolean | undefined, args: string[]): Promise<unknown>;
  readonly isOpen: boolean;
  readonly isReady: boolean;
  /** The master it uses now: what tells a sentinel client from a single client by shape. */
  getMasterNode(): unknown;
  once?(event: 'ready', listener: () => void): unknown;
}

/**
 * What RedisStore uses of a Valkey GLIDE `GlideClient` or `GlideClusterClient` (`@valkey/valkey-glide`):
 * `customCommand`, which a cluster client routes by the command's key (EVALSHA's first key).
 */
export interface GlideClient {
  customCommand(args: string[], options?: unknown): Promise<unknown>;
  close(errorMessage?: string): void;
  /** `GlideClusterClient` only: what tells a cluster client from a standalone one by shape. */
  fcallWithRoute?: unknown;
}

/** Any client RedisStore accepts. Floodgate never connects nor closes it. */
export type RedisClient = IoredisClient | NodeRedisClient | NodeRedisCluster | NodeRedisSentinel | GlideClient;

/** A client bound to the protocol: how to send, how to delete, whether it can take a command now, and what in its configuration is risky. */
export interface ClientBinding {
  readonly send: SendCommand;
  readonly del: (key: string) => Promise<unknown>;
  /** Any other command (its raw reply), or undefined when the client has no way to send one. */
  readonly command: ((args: string[]) => Promise<unknown>) | undefined;
  /**
   * A plain command about `key`, sent where that key lives (a Cluster: its slot's master; a
   * keyless command such as TIME goes there too where the client can route it so), or undefined
   * when the client cannot send one. Not a script: EVAL and EVALSHA stay the decisions' own.
   */
  readonly keyed: ((key: string, args: string[]) => Promise<unknown>) | undefined;
  /** Undefined when a command can go now (or waits only for the client's first connection), else why it cannot. */
  unavailable(): string | undefined;
  readonly warnings: readonly string[];
  /**
   * A Redis Cluster client: a script's keys must then all be in one hash slot, so only subjects of
   * one slot share a script call (a single server, Sentinel's master: any subjects).
   */
  readonly cluster: boolean;
  /**
   * A Cluster client's node for a hash slot now (its master's address, from the client's own slot
   * map), or undefined when not known; absent for a single server and for clients that show no
   * slot map. RedisStore bounds the calls in flight per node with it.
   */
  readonly nodeOf?: (slot: number) => string | undefined;
  /**
   * Runs `sendAll`, which sends several commands synchronously, so that they leave in one socket
   * write per connection rather than one each: Redis then reads and parses them in one go.
   */
  batch(sendAll: () => void): void;
}

type Shape = Record<string, unknown>;
const isFunction = (value: unknown): boolean => typeof value === 'function';

/** ioredis: `evalsha` and `eval` methods (node-redis spells it `evalSha`). */
export function isIoredis(value: unknown): value is IoredisClient {
  return typeof value === 'object' && value !== null && isFunction((value as Shape).evalsha) && isFunction((value as Shape).eval);
}

/** node-redis, client or cluster: `sendCommand` and the boolean `isOpen` (ioredis has a `sendCommand` but no `isOpen`). */
export function isNodeRedis(value: unknown): value is NodeRedisClient | NodeRedisCluster | NodeRedisSentinel {
  return typeof value === 'object' && value !== null && isFunction((value as Shape).sendCommand) && typeof (value as Shape).isOpen === 'boolean';
}

/** Valkey GLIDE, client or cluster: `customCommand` and `close`, and neither ioredis's `evalsha` nor node-redis's `sendCommand`. */
export function isGlide(value: unknown): value is GlideClient {
  return typeof value === 'object' && value !== null && isFunction((value as Shape).customCommand) && isFunction((value as Shape).close) && !isFunction((value as Shape).sendCommand);
}

/** The binding for a client of a shape RedisStore knows, or undefined. */
export function bindClient(client: unknown): ClientBinding | undefined {
  if (isIoredis(client)) return ioredisBinding(client);
  if (isGlide(client)) return glideBinding(client);
  if (!isNodeRedis(client)) return undefined;
  if ('masters' in client && Array.isArray(client.masters)) return nodeRedisClusterBinding(client);
  if (isFunction((client as unknown as Shape).getMasterNode)) return nodeRedisSentinelBinding(client as NodeRedisSentinel);
  return nodeRedisBinding(client as NodeRedisClient);
}

/** True once the client has been ready: from then on a command goes only on a ready connection. */
function readiness(initiallyReady: boolean, client: { once?(event: 'ready', listener: () => void): unknown }): () => boolean {
  let everReady = initiallyReady;
  // The public 'ready' event, not a private field.
  if (!everReady && isFunction(client.once)) client.once!('ready', () => (everReady = true));
  return () => everReady;
}

// ioredis statuses of a client that is still making its first connection: a command waits in the
// offline queue for it (bounded by timeoutMs). After the first 'ready', only 'ready' is sent.
const FIRST_CONNECT = new Set(['wait', 'connecting', 'connect']);

interface Corkable {
  cork(): void;
  uncork(): void;
}
const isCorkable = (stream: unknown): stream is Corkable =>
  typeof stream === 'object' && stream !== null && isFunction((stream as Shape).cork) && isFunction((stream as Shape).uncork);

/**
 * ioredis writes each command to its socket at once, one write (and one Redis read) per command.
 * Corked, a socket keeps what is written until uncork() and hands it to the kernel in one writev:
 * the commands of `sendAll` go in one write per connection (a Cluster's per node: each call still
 * goes to the node that holds its slot). Nothing waits: uncork() runs before `batch` returns.
 */
function ioredisBatch(client: IoredisClient): ClientBinding['batch'] {
  return (sendAll) => {
    const streams: Corkable[] = [];
    if (isFunction(client.nodes)) {
      for (const node of client.nodes!()) if (isCorkable(node.stream)) streams.push(node.stream);
    } else if (isCorkable(client.stream)) {
      streams.push(client.stream);
    }
    for (const stream of streams) stream.cork();
    try {
      sendAll();
    } finally {
      for (const stream of streams) stream.uncork();
    }
  };
}

/** node-redis queues commands and writes one turn's queue in one go (corked) itself. */
const sendNow: ClientBinding['batch'] = (sendAll) => sendAll();

/**
 * EvalArgs with every number made a string, in place (the array is the call's own). ioredis checks
 * each argument that is not a string with `instanceof Buffer`, and on Node 20 the global `Buffer`
 * is an accessor: a global load and a getter call per argument, more than the number's own String().
 */
function allStrings(sent: SentArgs): EvalArgs {
  const args = sent as EvalArgs;
  for (let i = 1; i < args.length; i++) if (typeof args[i] === 'number') args[i] = String(args[i]);
  return args;
}

/**
 * ioredis: its own evalsha and eval, which a Cluster routes by the key. Their Buffer twins where the
 * client has them: the reply is then not copied into strings (a pass over it and a global `Buffer`
 * load per entry); the protocol reads its integers as numbers either way and a script error's text
 * with String(), which decodes a Buffer as UTF-8.
 */
function ioredisBinding(client: IoredisClient): ClientBinding {
  const everReady = readiness(client.status === undefined || client.status === 'ready' || !isFunction(client.once), client);
  const raw = isFunction(client.evalshaBuffer) && isFunction(client.evalBuffer);
  return {
    send: raw
      ? (command, args) => (command === 'EVALSHA' ? client.evalshaBuffer!(...allStrings(args)) : client.evalBuffer!(...allStrings(args)))
      : (command, args) => (command === 'EVALSHA' ? client.evalsha(...allStrings(args)) : client.eval(...allStrings(args))),
    del: (key) => client.del(key),
    command: isFunction(client.call) ? (args) => client.call!(args[0], ...args.slice(1)) : undefined,
    // A Cluster routes a keyed command by its key; TIME goes to any node (their clocks agree within NTP's error).
    keyed: isFunction(client.call) ? (_key, args) => client.call!(args[0], ...args.slice(1)) : undefined,
    unavailable() {
      const status = client.status;
      // QUIT (or disconnect) sent: the connection is still 'ready' until Redis closes it, but a command
      // written now reaches a closed socket (EPIPE), which fails the app's own quit() (ioredis flags it).
      if ((client as { manuallyClosing?: boolean }).manuallyClosing === true) return 'Redis connection is closing (quit or disconnect was called).';
      if (status === undefined || status === 'ready' || (!everReady() && FIRST_CONNECT.has(status))) return undefined;
      return `Redis connection is ${status}.`;
    },
    warnings: ioredisWarnings(client),
    cluster: isFunction(client.nodes),
    // Cluster's public `slots`: per slot, its nodes' "host:port", the master first.
    ...(isFunction(client.nodes) ? { nodeOf: (slot: number) => (client as { slots?: readonly (readonly string[] | undefined)[] }).slots?.[slot]?.[0] } : {}),
    batch: ioredisBatch(client),
  };
}

/** node-redis wants every argument as a string (a Buffer too), never a number. */
function commandArgs(command: string, args: SentArgs): string[] {
  return [command, ...args.map(String)];
}

/**
 * node-redis, single client. Not ready after having been: fail now. Its offline queue would hold the
 * command through the outage and send it on reconnect, after the deadline answered the request.
 */
function nodeRedisBinding(client: NodeRedisClient): ClientBinding {
  const everReady = readiness(client.isReady, client);
  return {
    send: (command, args) => client.sendCommand(commandArgs(command, args)),
    del: (key) => client.sendCommand(['DEL', key]),
    command: (args) => client.sendCommand(args),
    keyed: (_key, args) => client.sendCommand(args),
    unavailable: () => nodeRedisUnavailable(client, everReady()),
    warnings: nodeRedisWarnings(client, 'client', (client as { options?: NodeRedisOptions }).options),
    cluster: false,
    batch: sendNow,
  };
}

/** node-redis cluster: routed by the first key (all keys of a subject share one hash tag, so one slot). */
function nodeRedisClusterBinding(cluster: NodeRedisCluster): ClientBinding {
  const everReady = readiness(cluster.isReady === true, cluster as { once?(event: 'ready', listener: () => void): unknown });
  return {
    send: (command, args) => cluster.sendCommand(String(args[2]), false, commandArgs(command, args)),
    del: (key) => cluster.sendCommand(key, false, ['DEL', key]),
    command: (args) => cluster.sendCommand(undefined, true, args),
    // Routed by the key given, whatever the command: TIME is read from the master that holds the key.
    keyed: (key, args) => cluster.sendCommand(key, false, args),
    unavailable: () => nodeRedisUnavailable(cluster, everReady() || cluster.isReady === true),
    warnings: nodeRedisWarnings(cluster, 'cluster', (cluster as { options?: { defaults?: NodeRedisOptions } }).options?.defaults),
    cluster: true,
    // The cluster's public `slots` getter: per slot, its shard (`master.address` is "host:port").
    nodeOf: (slot) => (cluster as { slots?: readonly ({ master?: { address?: string } } | undefined)[] }).slots?.[slot]?.master?.address,
    batch: sendNow,
  };
}

/**
 * GLIDE puts the server's error after a preamble of its own ('An error was signalled by the server:
 * - NoScriptError: No matching script...'): the protocol's NOSCRIPT path needs the server's word
 * first, as the other clients give it. Other errors keep their message (their kinds are found
 * anywhere in it).
 */
function glideError(error: unknown): never {
  if (error instanceof Error && /NoScriptError/.test(error.message) && !error.message.startsWith('NOSCRIPT')) {
    throw Object.assign(new Error(`NOSCRIPT ${error.message}`), { cause: error });
  }
  throw error;
}

/**
 * Valkey GLIDE: every command through `customCommand` (a cluster client routes EVALSHA and EVAL by
 * their first key, DEL by its key). GLIDE reconnects by itself and bounds each request with its own
 * `requestTimeout`; it has no public connection state, so nothing is refused up front: a call to a
 * lost connection fails within the store's deadline.
 */
function glideBinding(client: GlideClient): ClientBinding {
  return {
    send: (command, args) => client.customCommand(commandArgs(command, args)).catch(glideError),
    del: (key) => client.customCommand(['DEL', key]),
    command: (args) => client.customCommand(args),
    keyed: (_key, args) => client.customCommand(args),
    unavailable: () => undefined,
    warnings: [],
    cluster: isFunction(client.fcallWithRoute),
    batch: sendNow,
  };
}

/** node-redis sentinel: every command to the master (`isReadonly` false); after a failover it moves to the new one itself. */
function nodeRedisSentinelBinding(sentinel: NodeRedisSentinel): ClientBinding {
  const everReady = readiness(sentinel.isReady, sentinel);
  return {
    send: (command, args) => sentinel.sendCommand(false, commandArgs(command, args)),
    del: (key) => sentinel.sendCommand(false, ['DEL', key]),
    command: (args) => sentinel.sendCommand(false, args),
    keyed: (_key, args) => sentinel.sendCommand(false, args),
    unavailable: () => nodeRedisUnavailable(sentinel, everReady()),
    warnings: nodeRedisWarnings(sentinel, 'sentinel', undefined),
    cluster: false,
    batch: sendNow,
  };
}

function nodeRedisUnavailable(client: { isOpen: boolean; isReady?: boolean }, everReady: boolean): string | undefined {
  if (!client.isOpen) return 'The node-redis client is not open: call `await client.connect()` before the first request (Floodgate never connects it).';
  if (client.isReady === false && everReady) return 'The node-redis connection is reconnecting.';
  return undefined;
}

interface NodeRedisOptions {
  socket?: { reconnectStrategy?: unknown };
}

/** What in a node-redis client's own setup turns an outage into a crash or a store that never recovers. */
function nodeRedisWarnings(client: object, kind: 'client' | 'cluster' | 'sentinel', options: NodeRedisOptions | undefined): string[] {
  const warnings: string[] = [];
  const listeners = (client as { listenerCount?(event: string): number }).listenerCount?.('error');
  if (listeners === 0) {
    warnings.push(
      `RedisStore: the node-redis ${kind} has no 'error' listener. node-redis emits 'error' when the ` +
        'connection drops, and with no listener Node.js ends the process: add ' +
        "client.on('error', (error) => log(error)) before connecting (see docs/failure-modes.md).",
    );
  }
  if (options?.socket?.reconnectStrategy === false) {
    warnings.push(
      `RedisStore: the node-redis ${kind} has socket.reconnectStrategy: false, so after one dropped ` +
        'connection it never reconnects and every decision takes the failure policy until restart. ' +
        'Keep the default reconnectStrategy (see docs/failure-modes.md).',
    );
  }
  return warnings;
}

/** What in the client's own configuration can count one request twice. Read from its public `options`. */
function ioredisWarnings(client: IoredisClient): string[] {
  const own = (client as { options?: { autoResendUnfulfilledCommands?: boolean; redisOptions?: { autoResendUnfulfilledCommands?: boolean } } }).options;
  if (!own) return [];
  // A Cluster keeps its per-node connection options under redisOptions.
  const resend = own.redisOptions ? own.redisOptions.autoResendUnfulfilledCommands : own.autoResendUnfulfilledCommands;
  if (resend === false) return [];
  return [
    'RedisStore: the ioredis client resends unanswered commands after a reconnect ' +
      '(autoResendUnfulfilledCommands is not false), so a script Redis already ran before the ' +
      'connection dropped can run twice and count one request twice. Create the client with ' +
      '{ autoResendUnfulfilledCommands: false } (see docs/failure-modes.md).',
  ];
}
