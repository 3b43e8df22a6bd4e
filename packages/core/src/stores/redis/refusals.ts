// Redis's refusals (NOPERM, OOM, READONLY) as FloodgateErrors whose message names the fix.
import { FloodgateError } from '../../base/errors';
import { storeErrorKind } from '../../observe/metrics';
import { aclRule } from './acl';

/** What a Redis refusal means and what fixes it, by kind; the prefix comes from the call's first key. */
const REFUSALS = {
  noperm: {
    code: 'FG_STORE_NOPERM',
    explain: (prefix: string) =>
      `the Redis user's ACL does not allow a command or key Floodgate's scripts use (Redis 7 checks every command a script runs). ` +
      `Grant it exactly the least-privilege rule: ACL SETUSER <user> ${aclRule({ prefix })} ` +
      `(aclRule({ prefix: '${prefix}' }) from @floodgate/core prints it; docs/production-redis.md#acl)`,
  },
  oom: {
    code: 'FG_STORE_OOM',
    explain: () =>
      'Redis reached maxmemory and refuses writes (maxmemory-policy noeviction); nothing was counted. ' +
      'Raise maxmemory or give rate-limit state a Redis of its own; do not switch to an evicting policy, ' +
      'which deletes counters and hands callers a fresh budget (docs/production-redis.md#memory-policy)',
  },
  readonly: {
    code: 'FG_STORE_READONLY',
    explain: () =>
      'the connection reached a read-only replica, typically a master demoted by a failover while the client stayed connected to it. ' +
      'Connect through Sentinel or the Cluster client so writes follow the master, and have the client reconnect on READONLY ' +
      "(ioredis: reconnectOnError: (e) => e.message.startsWith('READONLY')) (docs/production-redis.md#sentinel)",
  },
} as const;

/** A Redis refusal as a FloodgateError whose message names the fix; any other error as it is. */
export function explainRefusal(error: unknown, keys: readonly string[]): never {
  const kind = storeErrorKind(error);
  if (kind === 'noperm' || kind === 'oom' || kind === 'readonly') {
    const refusal = REFUSALS[kind];
    const said = error instanceof Error ? error.message : String(error);
    const prefix = keys[0]?.slice(0, Math.max(0, keys[0].indexOf(':'))) || 'fg';
    throw Object.assign(new FloodgateError(refusal.code, `Redis refused the script (${said.trim()}): ${refusal.explain(prefix)}.`), { cause: error });
  }
  throw error;
}
