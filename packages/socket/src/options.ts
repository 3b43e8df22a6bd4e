// The socket limiter's options: their types, parsed once at construction into one resolved form (the caller's object is never mutated).
import { createIdentify, createLimiter, MemoryStore, parseDuration, type CreateLimiterOptions, type Duration, type FailMode, type Identify, type IdentityOptions, type Limiter, type Logger, type Store } from '@floodgate/core';
import { checkOptionNames, createAllowList, invalidOption, type AllowList } from '@floodgate/core/http';

/** A rate limit on messages: what `createLimiter` takes for its limits (`limit` + `windowMs`, `algorithm`, or several `limits`). */
export type MessageLimitOptions = Pick<CreateLimiterOptions, 'limit' | 'windowMs' | 'algorithm' | 'limits' | 'name' | 'burst' | 'refillPerSecond'>;

/** Open connections per identity, each held as a lease in the store (docs/sockets.md#open-connections). */
export interface ConnectionLimitOptions {
  /** Most connections one identity holds open at once, over every instance. Required. */
  limit: number;
  /** How long a lease lives without renewal: the bound on how long a crashed instance's connections stay counted. Default '30s' (1 s to 1 h). */
  leaseMs?: Duration;
  /** The longest a connection holds its slot; a connection open longer is no longer counted. Default '24h' (the ceiling). */
  maxHoldMs?: Duration;
}

/** What happens to a message over a limit. */
export type OnLimit = 'drop' | 'error' | 'close';
export const ON_LIMIT = ['drop', 'error', 'close'] as const;

/** Told of every refused message and refused connection, for logs and metrics. */
export interface LimitedEvent {
  /** 'message': a message over a limit; 'connection': a handshake refused (`status` says why). */
  readonly kind: 'message' | 'connection';
  /** Which limit refused a message: this connection's, the identity's (every connection, every instance), or this connection's backlog (`maxPending`). */
  readonly limit?: 'connection' | 'identity' | 'pending' | 'cost';
  /** For a connection: 401 (unknown API key with `identity.unknownKey: 'reject'`), 429 (limited), 503 (store failed, failMode 'closed'). */
  readonly status?: 401 | 429 | 503;
  /** ms until a message (or connection) of the same cost would be admitted; 0 when unknown (a connection slot frees when one closes). */
  readonly retryAfterMs: number;
  readonly reason: string;
  /** The hashed identity's kind: 'api-key', 'ip', 'unknown'. Never the raw key or IP. */
  readonly identity?: string;
}

/** Options common to the ws and Socket.IO limiters. */
export interface SocketLimiterOptions {
  /** Where the shared counts and leases live: a RedisStore for limits across instances. Default: a new MemoryStore (this process only). */
  store?: Store;
  /** Key prefix. Default 'fg'. */
  prefix?: string;
  /** Messages per identity over every connection and instance. Default: none. */
  messages?: MessageLimitOptions;
  /** Messages per connection, decided in this process's memory (a connection lives on one instance). Default: none. */
  perConnection?: MessageLimitOptions;
  /** Open connections per identity, as leases. Default: none. */
  connections?: ConnectionLimitOptions;
  /** 'drop' (the default) discards it; 'error' answers it with the retry time; 'close' closes the connection. */
  onLimit?: OnLimit;
  /** ws close code for 'close' and for a connection refused after the upgrade: 1008 (Policy Violation, the default) or 3000 to 4999 (4429 is a common choice). */
  closeCode?: number;
  /** Messages per connection waiting for a decision; past it a message is refused at once (limit 'pending'). Default 64 (1 to 10,000). */
  maxPending?: number;
  /** The proxies in front of the server, as IPs and CIDR ranges: only then is X-Forwarded-For read (the right-most hop that is not a listed proxy). Default: none. */
  trustProxy?: readonly string[];
  /** Identity from the handshake's headers, as for HTTP: apiKeyHeaders, resolveKey, unverifiedKeys, ipv6Subnet... (docs/identity.md). */
  identity?: IdentityOptions;
  /** What a store failure does: 'local' (the default), 'open' or 'closed' (docs/failure-modes.md). */
  failMode?: FailMode;
  /** Where warnings go. Default console. */
  logger?: Logger;
  /** Told of every refused message and connection. */
  onLimited?: (event: LimitedEvent) => void;
}

export const COMMON_OPTION_NAMES = ['store', 'prefix', 'messages', 'perConnection', 'connections', 'onLimit', 'closeCode', 'maxPending', 'trustProxy', 'identity', 'failMode', 'logger', 'onLimited'] as const;
const MESSAGE_LIMIT_NAMES = ['limit', 'windowMs', 'algorithm', 'limits', 'name', 'burst', 'refillPerSecond'];
const CONNECTION_LIMIT_NAMES = ['limit', 'leaseMs', 'maxHoldMs'];
/** The one scope each shared limit counts in: message budgets are per identity, whatever the event. */
export const MESSAGES_SCOPE = 'socket:messages';
export const CONNECTIONS_SCOPE = 'socket:connections';
const DAY_MS = 86_400_000;

/** Everything a connection reads, built once. */
export interface ResolvedSocketOptions {
  readonly identify: Identify;
  readonly messages: Limiter | undefined;
  readonly perConnection: Limiter | undefined;
  readonly connections: Limiter | undefined;
  readonly onLimit: OnLimit;
  readonly closeCode: number;
  readonly maxPending: number;
  readonly trusted: AllowList | undefined;
  readonly logger: Logger;
  readonly onLimited: ((event: LimitedEvent) => void) | undefined;
}

function object<T extends object>(option: string, value: unknown): T {
  if (!value || typeof value !== 'object' || Array.isArray(value)) invalidOption(option, value, 'an object');
  return value as T;
}

/** A store-backed (or local) message limiter, its options checked under their own name. */
function messageLimiter(option: string, value: unknown, base: CreateLimiterOptions): Limiter {
  const limit = object<MessageLimitOptions>(option, value);
  checkOptionNames(`\`${option}\``, limit, MESSAGE_LIMIT_NAMES);
  return createLimiter({ ...base, ...limit });
}

function connectionLimiter(value: unknown, base: CreateLimiterOptions): Limiter {
  const c = object<ConnectionLimitOptions>('connections', value);
  checkOptionNames('`connections`', c, CONNECTION_LIMIT_NAMES);
  if (c.limit === undefined) invalidOption('connections.limit', c.limit, 'a whole number from 1 to 10000 (open connections per identity)');
  // Checked here under their own names; the core checks them again as the lease's.
  const leaseMs = parseDuration('connections.leaseMs', c.leaseMs ?? 30_000, 1_000, 3_600_000);
  const maxHoldMs = parseDuration('connections.maxHoldMs', c.maxHoldMs ?? DAY_MS, leaseMs, DAY_MS);
  wholeNumber('connections.limit', c.limit, 1, 10_000, 0);
  // The lease rides with a rate limit no handshake reaches: a limiter always has one, and churn is
  // already bounded by `messages` (a new connection draws from the same budget).
  return createLimiter({ ...base, name: 'handshakes', limit: 1_000_000_000, windowMs: 1_000, concurrency: { limit: c.limit, leaseMs, maxHoldMs, name: 'connections' } });
}

function wholeNumber(option: string, value: unknown, min: number, max: number, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) invalidOption(option, value, `a whole number from ${min} to ${max}`);
  return value;
}

function closeCodeOption(value: unknown): number {
  if (value === undefined) return 1008;
  const ok = typeof value === 'number' && Number.isInteger(value) && (value === 1008 || (value >= 3000 && value <= 4999));
  if (!ok) invalidOption('closeCode', value, '1008 (Policy Violation) or an application code from 3000 to 4999, such as 4429');
  return value;
}

/** Parses the options common to both servers; `extra` names the options the server's own limiter takes. */
export function resolveSocketOptions(options: SocketLimiterOptions, where: string, extra: readonly string[]): ResolvedSocketOptions {
  object(`${where} options`, options);
  checkOptionNames(`${where} options`, options, [...COMMON_OPTION_NAMES, ...extra]);
  const { store, prefix, failMode, logger } = options;
  const base: CreateLimiterOptions = { store: store ?? new MemoryStore(), ...(prefix !== undefined && { prefix }), ...(failMode !== undefined && { failMode }), ...(logger !== undefined && { logger }) };
  if (options.messages === undefined && options.perConnection === undefined && options.connections === undefined) {
    invalidOption('messages', undefined, 'at least one of `messages`, `perConnection` or `connections` (a limiter that limits nothing is a mistake)');
  }
  const messages = options.messages === undefined ? undefined : messageLimiter('messages', options.messages, base);
  // Local to this process: a connection lives on one instance. Never fails, so it needs no failure options.
  const perConnection = options.perConnection === undefined ? undefined : messageLimiter('perConnection', options.perConnection, { store: new MemoryStore(), ...(logger !== undefined && { logger }) });
  const connections = options.connections === undefined ? undefined : connectionLimiter(options.connections, base);
  const onLimit = options.onLimit ?? 'drop';
  if (!ON_LIMIT.includes(onLimit)) invalidOption('onLimit', onLimit, `one of ${ON_LIMIT.map((m) => `'${m}'`).join(', ')}`);
  if (options.onLimited !== undefined && typeof options.onLimited !== 'function') invalidOption('onLimited', options.onLimited, 'a function');
  const identityOptions = options.identity === undefined ? {} : object<IdentityOptions>('identity', options.identity);
  return {
    identify: createIdentify({ ...(logger !== undefined && { logger }), ...identityOptions }),
    messages,
    perConnection,
    connections,
    onLimit,
    closeCode: closeCodeOption(options.closeCode),
    maxPending: wholeNumber('maxPending', options.maxPending, 1, 10_000, 64),
    trusted: createAllowList(options.trustProxy, 'trustProxy'),
    logger: logger ?? console,
    onLimited: options.onLimited,
  };
}
