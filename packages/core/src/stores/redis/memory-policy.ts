// The memory-policy check: does the Redis evict keys when full (an evicting maxmemory-policy hands callers fresh budgets)?
import { withDeadline } from '../../base/deadline';
import type { ClientBinding } from './clients';

/**
 * What `CONFIG GET maxmemory*` said: the policy and the limit in bytes (0: none), or why it could not
 * be read (CONFIG forbidden by the ACL, renamed, as on managed services).
 */
export type MemoryPolicy = { readonly policy: string; readonly maxmemory: number; readonly evicts: boolean } | { readonly unknown: string };

/**
 * maxmemory-policy values under which Redis deletes keys when full. Floodgate's keys all carry a TTL,
 * so the volatile-* policies evict them as readily as allkeys-*: a deleted counter is a fresh budget.
 */
const EVICTING = /^(allkeys|volatile)-(lru|lfu|random)$|^volatile-ttl$/;

/** CONFIG GET's reply as name -> value, whatever shape the client gives it (flat array, object, Map, GLIDE's [{ key, value }]). */
function configPairs(reply: unknown): Map<string, string> {
  const pairs = new Map<string, string>();
  if (reply instanceof Map) for (const [k, v] of reply) pairs.set(String(k), String(v));
  else if (Array.isArray(reply)) {
    if (reply.every((e) => e !== null && typeof e === 'object' && 'key' in e && 'value' in e)) {
      for (const e of reply as { key: unknown; value: unknown }[]) pairs.set(String(e.key), String(e.value));
    } else for (let i = 0; i + 1 < reply.length; i += 2) pairs.set(String(reply[i]), String(reply[i + 1]));
  } else if (reply !== null && typeof reply === 'object') for (const [k, v] of Object.entries(reply)) pairs.set(k, String(v));
  return pairs;
}

/**
 * Reads the policy once (5 s bound), off the request path and never failing one: a Redis that
 * forbids or renames CONFIG is tolerated and the check skipped. `set` gets what was found (at once
 * when the client cannot send CONFIG GET), `warn` the warning when the Redis evicts.
 */
export function checkMemoryPolicy(command: ClientBinding['command'], set: (policy: MemoryPolicy) => void, warn: (warning: string) => void): void {
  if (!command) {
    set({ unknown: 'the client has no way to send CONFIG GET' });
    return;
  }
  withDeadline(command(['CONFIG', 'GET', 'maxmemory*']), 5_000, 'Redis CONFIG GET').then(
    (reply) => {
      const pairs = configPairs(reply);
      const policy = pairs.get('maxmemory-policy');
      if (policy === undefined) {
        set({ unknown: 'CONFIG GET returned no maxmemory-policy' });
        return;
      }
      const maxmemory = Number(pairs.get('maxmemory') ?? 0);
      // Without a maxmemory (0, the default on 64-bit systems) Redis never evicts, whatever the policy.
      const evicts = EVICTING.test(policy) && maxmemory > 0;
      set({ policy, maxmemory, evicts });
      if (evicts) {
        warn(
          `RedisStore: Redis's maxmemory-policy is '${policy}' (maxmemory ${maxmemory} bytes): when Redis is full it deletes keys, ` +
            "Floodgate's counters among them, and a caller whose counter was deleted gets a fresh budget. Set " +
            "maxmemory-policy to 'noeviction' on the Redis that holds rate-limit state (writes then fail with OOM, " +
            'which the failure policy answers), or give it a Redis of its own (see docs/production-redis.md#memory-policy).',
        );
      }
    },
    (error: unknown) => {
      set({ unknown: error instanceof Error ? error.message : String(error) });
    },
  );
}
