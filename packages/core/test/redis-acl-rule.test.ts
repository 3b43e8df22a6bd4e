// aclRule: the least-privilege ACL rule, derived from the scripts' own redis.call commands, validated like every option.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { aclRule, FloodgateError } from '../src';
import { SCRIPTS } from '../src/stores/redis/protocol';

/** Every command the composed scripts run, read from their source here, apart from the generator's reading. */
function commandsInScripts(): Set<string> {
  const found = new Set<string>();
  for (const script of Object.values(SCRIPTS)) {
    for (const m of script.source.replace(/--.*$/gm, '').matchAll(/redis\.p?call\(\s*'([A-Za-z|]+)'/g)) found.add(m[1].toLowerCase());
  }
  return found;
}

describe('aclRule', () => {
  it("grants the prefix's keys, no channel, and exactly the scripts' commands plus RedisStore's own", () => {
    const rule = aclRule({ prefix: 'fg' });
    const tokens = rule.split(' ');
    expect(tokens.slice(0, 6)).toEqual(['resetkeys', '~fg:*', '~fg.instances', '~fg.configs', 'resetchannels', '-@all']);
    const granted = new Set(tokens.filter((t) => t.startsWith('+')).map((t) => t.slice(1)));
    const scripts = commandsInScripts();
    expect(scripts.has('time')).toBe(true);
    expect(scripts.has('zadd')).toBe(true);
    expect(scripts.has('zcard')).toBe(false); // only the fleet announcement counts a ZSET whole
    // RedisStore's own: the decisions' EVALSHA (EVAL after NOSCRIPT), reset's DEL, PING, and the fleet announcement's plain commands
    // (its configurations record: HSET, HVALS, HDEL; never HGETALL, which would read a limiter key's fields).
    expect([...granted].sort()).toEqual([...new Set([...scripts, 'evalsha', 'eval', 'del', 'ping', 'time', 'zadd', 'zremrangebyscore', 'zcard', 'pexpire', 'hset', 'hvals', 'hdel'])].sort());
    expect(granted.has('hgetall')).toBe(false);
    expect(aclRule()).toBe(rule);
  });

  it('is the rule docs/production-redis.md prints for the default prefix (the docs cannot drift either)', () => {
    const docs = readFileSync(join(__dirname, '..', '..', '..', 'docs', 'production-redis.md'), 'utf8');
    expect(docs).toContain(`\n${aclRule({ prefix: 'fg' })}\n`);
  });

  it('takes several prefixes, each its own key pattern', () => {
    expect(aclRule({ prefix: ['fg', 'api.v2', 'fg'] })).toMatch(/^resetkeys ~fg:\* ~fg\.instances ~fg\.configs ~api\.v2:\* ~api\.v2\.instances ~api\.v2\.configs resetchannels -@all \+/);
  });

  it.each([
    [{ prefix: 'a*' }, 'FG_INVALID_OPTION', /Invalid option `prefix`: got "a\*"; expected a string matching/],
    [{ prefix: [] }, 'FG_INVALID_OPTION', /expected a prefix or a non-empty array of prefixes/],
    [{ prefix: ['ok', 'not ok'] }, 'FG_INVALID_OPTION', /got "not ok"/],
    [{ prefixes: 'fg' }, 'FG_UNKNOWN_OPTION', /prefix/],
  ])('refuses %j', (options, code, message) => {
    let error: unknown;
    try {
      aclRule(options as never);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(FloodgateError);
    expect((error as FloodgateError).code).toBe(code);
    expect((error as Error).message).toMatch(message);
  });
});
