// The least-privilege Redis ACL rule for Floodgate's scripts, derived from the commands the Lua files run (generated with them, so it cannot drift).
import { LUA_COMMANDS } from '../../lua/scripts.generated';
import { invalidOption } from '../../base/errors';
import { fleetConfigsKey, fleetKey } from '../../base/keys';
import { checkOptionNames, keyPrefix, optionNames } from '../../base/validate';

export interface AclRuleOptions {
  /**
   * The limiters' key prefix (their `prefix` option), or several: the user may touch only keys under
   * `<prefix>:`. Default 'fg', the limiters' default.
   */
  prefix?: string | readonly string[];
}

const ACL_RULE_OPTION_NAMES = optionNames<AclRuleOptions>()(['prefix']);

/**
 * What RedisStore sends itself, outside the scripts: EVALSHA, EVAL once after NOSCRIPT (which also
 * loads the script), DEL for `limiter.reset()`, and PING, which clients and health checks send
 * (and the fleet announcement's, below).
 */
const CLIENT_COMMANDS = ['evalsha', 'eval', 'del', 'ping'] as const;

/**
 * The fleet announcement (RedisStore.announce and peers, failure/fleet-count.ts), plain commands on
 * `<prefix>.instances` and `<prefix>.configs` (key patterns of their own in the rule): how the
 * default `instances: 'auto'` learns how many instances share a limit, and whether two apps do.
 */
export const FLEET_COMMANDS = ['time', 'zadd', 'zremrangebyscore', 'zcard', 'pexpire', 'hset', 'hvals', 'hdel'] as const;

/**
 * Every command a script may run, whichever algorithms a limiter uses: Redis 7 checks each
 * redis.call against the caller's ACL, so a rule allowing only EVALSHA fails every decision.
 */
/**
 * The plain commands of runtime overrides (RedisStore putOverride, dropOverride, listOverrides,
 * putBroad, dropBroad, readBroad), on keys under the prefix; the scripts run them too. Never HGETALL:
 * the broad overrides are read with HVALS, as the fleet's records are.
 */
export const OVERRIDE_COMMANDS = ['set', 'zrange', 'zrangebyscore', 'zrem', 'hset', 'hvals', 'hdel', 'pexpire', 'time'] as const;

export const SCRIPT_COMMANDS: readonly string[] = [...new Set(Object.values(LUA_COMMANDS).flat())].sort();

/**
 * The ACL rule a Redis user needs for Floodgate and nothing more: keys under the prefix only, no
 * pub/sub channel, no command but the scripts' and RedisStore's own. Use it as
 * `ACL SETUSER <name> on ><password> <rule>` (or a `user` line of an ACL file).
 *
 *     aclRule({ prefix: 'fg' })
 *     // 'resetkeys ~fg:* ~fg.instances resetchannels -@all +del +eval +evalsha +get +hmget +hset +pexpire +ping +set +time +zadd ...'
 *
 * It leaves out CONFIG GET, which RedisStore uses once to read `maxmemory-policy` (without it the
 * eviction check is skipped), and INFO, which ioredis's ready check sends (ioredis then warns and
 * skips the check; `enableReadyCheck: false` silences it). See docs/production-redis.md#acl.
 */
export function aclRule(options: AclRuleOptions = {}): string {
  if (!options || typeof options !== 'object' || Array.isArray(options)) invalidOption('aclRule', options, 'an options object { prefix }');
  checkOptionNames('aclRule options', options, ACL_RULE_OPTION_NAMES);
  const given = options.prefix ?? 'fg';
  const prefixes = typeof given === 'string' ? [given] : Array.isArray(given) && given.length > 0 ? given : invalidOption('prefix', given, 'a prefix or a non-empty array of prefixes');
  // Each prefix's keys, and its fleet's one key (failure/fleet-count.ts).
  const keys = [...new Set(prefixes.map((p: unknown) => keyPrefix('prefix', p)))].flatMap((p) => [`~${p}:*`, `~${fleetKey(p)}`, `~${fleetConfigsKey(p)}`]);
  const commands = [...new Set([...CLIENT_COMMANDS, ...FLEET_COMMANDS, ...OVERRIDE_COMMANDS, ...SCRIPT_COMMANDS])].sort().map((c) => `+${c}`);
  return ['resetkeys', ...keys, 'resetchannels', '-@all', ...commands].join(' ');
}
