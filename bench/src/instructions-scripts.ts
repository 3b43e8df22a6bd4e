// `pnpm bench:instructions:redis`: redis-server instructions per call (callgrind) of Floodgate's script against a PING, an empty script, the peers' shape and the floors of a script that reads Redis's clock.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { AlgorithmName } from '@floodgate/core';
import { startCountedRedis, type CountedRedis } from './instructions-callgrind';
import { groupsCall, scriptCall } from './script-call';
import { DEFAULT_ALGORITHM } from './types';

/** The least a limiter's script can do: Redis's clock, one hash read, one hash write with its expiry. */
const MINIMAL = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local s = redis.call('HMGET', KEYS[1], 'w', 'c', 'p')
local c = (tonumber(s[2]) or 0) + tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'w', math.floor(now / 3600000), 'c', c, 'p', 0)
redis.call('PEXPIRE', KEYS[1], 7200000)
return { now, 1, 0, 1, c, 0, 0 }`;

/**
 * A sketch, not wired into RedisStore: Floodgate's admitted sliding-window-counter decision for the
 * one shape most calls have (one subject, one limit, one request, consume), with the same ARGV as
 * the composed one-decision script (lua/one.lua: capacity, period, the cost unless 1), main.lua's reply of 7, and
 * nothing else defined or parsed. What a lean script per shape
 * would cost a call (its refusal path, a retry time, is left out: the measured calls all admit).
 */
const LEAN_SWC = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cap, win, key, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), KEYS[1], 1
if #ARGV > 2 then cost = tonumber(ARGV[3]) end
local s = redis.call('HMGET', key, 'w', 'c', 'p')
local w = math.floor(now / win)
local elapsed = now - w * win
local sw, c, p = tonumber(s[1]), 0, 0
if sw == w then c, p = tonumber(s[2]), tonumber(s[3]) elseif sw == w - 1 then p = tonumber(s[2]) end
local est = p * (win - elapsed) / win + c
if est + cost <= cap + 1e-9 then
  local reset = 0
  if c + cost > 0 then reset = win - elapsed + win elseif p > 0 then reset = win - elapsed end
  redis.call('HSET', key, 'w', w, 'c', c + cost, 'p', p)
  if sw ~= w then redis.call('PEXPIRE', key, math.max(1, math.ceil((w + 2) * win - now))) end
  return { now, 1, 0, 1, math.max(0, math.floor(cap - est - cost + 1e-9)), reset, 0 }
end
return { now, 0, 0, 0, math.max(0, math.floor(cap - est + 1e-9)), 0, -1 }`;

/** Redis's clock alone, as every Floodgate script reads it: one redis.call. */
const CLOCK_ONLY = `local t = redis.call('TIME')
return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/**
 * The floor of a limiter that reads Redis's clock and keeps its state in a hash, in a window it has
 * already written (so no PEXPIRE): TIME, one read, one write, no arithmetic worth counting. Every
 * Floodgate decision that admits does at least these three calls.
 */
const CLOCKED_FLOOR = `local t = redis.call('TIME')
local s = redis.call('HMGET', KEYS[1], 'w', 'c', 'p')
redis.call('HSET', KEYS[1], 'w', 1, 'c', (tonumber(s[2]) or 0) + 1, 'p', 0)
return 1`;

/**
 * The peers' shape (@fastify/rate-limit's script, hono-rate-limiter's and koa-ratelimit's in spirit):
 * INCR and PTTL on a counter whose window the key's expiry is, no clock read. PEXPIRE only on a
 * window's first hit, as theirs.
 */
const PEER_SHAPE = `local c = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if c == 1 or ttl < 0 then redis.call('PEXPIRE', KEYS[1], 3600000) ttl = 3600000 end
return { c, ttl }`;

interface Variant {
  name: string;
  /** One call; `i` is the call's number (a fresh subject per call where the variant wants one). */
  call: (redis: CountedRedis, i: number) => Promise<unknown>;
  /** Decisions per call (default 1): the table also gives instructions per decision. */
  decisions?: number;
  load?: string;
}

/**
 * Floodgate's script as a Redis Function library (Redis 7, FUNCTION LOAD, FCALL): a measurement, not
 * wired into RedisStore. Its helpers and chunks are defined once, when the library loads; each call
 * runs the main part alone, with fresh write-cache tables. What a call would cost if Redis kept the
 * definitions between calls, which EVALSHA never does.
 */
export function asFunctionLibrary(source: string, name: string): string {
  const at = mainAt(source);
  // A one-decision script (lua/one.lua) has no write cache to make afresh per call.
  const cache = source.includes('local CACHE, DIRTY, ORDER = {}, {}, {}') ? 'CACHE, DIRTY, ORDER = {}, {}, {}\n' : '';
  // A library's load code sees no `string` or `math` (Redis 7.0): the prelude's locals of theirs are set per call.
  const aliases = 'local format, floor, ceil, max = string.format, math.floor, math.ceil, math.max\n';
  if (!source.includes(aliases)) throw new Error("Floodgate's prelude no longer aliases string.format and math's functions as instructions-scripts.ts expects");
  const definitions = source.slice(0, at).replace(aliases, 'local format, floor, ceil, max\n');
  return `#!lua name=${name}\n${definitions}\nredis.register_function('${name}', function(KEYS, ARGV)\n${cache}${aliases.slice(6)}${source.slice(at)}\nend)\n`;
}

/** Floodgate's script cut short where its main part starts: what defining its helpers and chunks costs a call. */
export function definitionsOnly(source: string): string {
  const at = mainAt(source);
  return `${source.slice(0, at)}\ndo return 1 end${source.slice(at)}`;
}

/** Where the main part of Floodgate's script starts: main.lua's and lean.lua's first line, or one.lua's marker. */
function mainAt(source: string): number {
  const at = source.includes('\n-- one: main') ? source.indexOf('\n-- one: main') : source.indexOf('\nlocal mode = ARGV[1]');
  if (at < 0) throw new Error("Floodgate's script has no 'local mode = ARGV[1]' line nor '-- one: main': instructions-scripts.ts must learn its new shape");
  return at;
}

/** The Redis Function the measurement loads (asFunctionLibrary). */
const FUNCTION_NAME = 'floodgate_bench';

/** Subjects in the batch variant: about what one call carried at 10 connections, 10,000 callers (issue #44). */
const BATCH = 6;

function variants(algorithm: AlgorithmName, sha: (source: string) => string): Variant[] {
  const defs = definitionsOnly(scriptCall(algorithm, 1e9, 3_600_000, 'x').source);
  const floodgate = (key: (i: number) => string) => (redis: CountedRedis, i: number) => {
    const [sha, ...args] = scriptCall(algorithm, 1e9, 3_600_000, key(i)).evalsha;
    return redis.admin.call('EVALSHA', sha as string, ...(args as (string | number)[]));
  };
  const leanCall = (r: CountedRedis) => {
    const [, ...args] = scriptCall(algorithm, 1e9, 3_600_000, 'fgl:{one}:1').evalsha;
    return r.admin.call('EVALSHA', sha(LEAN_SWC), ...(args as (string | number)[]));
  };
  return [
    { name: 'PING', call: (r) => r.admin.ping() },
    { name: "EVALSHA of 'return 1'", load: 'return 1', call: (r) => r.admin.evalsha(sha('return 1'), 0) },
    { name: "the peers' shape: INCR, PTTL (no clock read)", load: PEER_SHAPE, call: (r) => r.admin.evalsha(sha(PEER_SHAPE), 1, 'fgp:{one}') },
    { name: "Redis's clock alone: TIME", load: CLOCK_ONLY, call: (r) => r.admin.evalsha(sha(CLOCK_ONLY), 0) },
    { name: 'the floor with Redis TIME, in a window already written: TIME, HMGET, HSET', load: CLOCKED_FLOOR, call: (r) => r.admin.evalsha(sha(CLOCKED_FLOOR), 1, 'fgc:{one}') },
    { name: 'minimal limiter script (TIME, HMGET, HSET, PEXPIRE)', load: MINIMAL, call: (r) => r.admin.evalsha(sha(MINIMAL), 1, 'fgm:{one}', 'c', 1) },
    ...(algorithm === 'sliding-window-counter'
      ? [{ name: 'a lean one-shape sliding-window-counter script (sketch: same ARGV and reply, admitted path), one subject', load: LEAN_SWC, call: leanCall }]
      : []),
    { name: `Floodgate's script (${algorithm}) cut before its main part: definitions only`, load: defs, call: (r) => r.admin.evalsha(sha(defs), 0) },
    { name: `Floodgate's script (${algorithm}), one subject`, call: floodgate(() => 'fgb:{one}:1') },
    { name: `Floodgate's script (${algorithm}), a new subject per call`, call: floodgate((i) => `fgb:{s${i}}:1`) },
    {
      name: `Floodgate's script (${algorithm}) as a Redis Function (measurement only: definitions made once, at FUNCTION LOAD), one subject`,
      call: (r) => {
        const [, ...args] = scriptCall(algorithm, 1e9, 3_600_000, 'fgf:{one}:1').evalsha;
        return r.admin.call('FCALL', FUNCTION_NAME, ...(args as (string | number)[]));
      },
    },
    {
      name: `Floodgate's script (${algorithm}), ${BATCH} new subjects per call (one turn's calls coalesced)`,
      decisions: BATCH,
      call: (r, i) => {
        const keys = Array.from({ length: BATCH }, (_, j) => `fgg:{g${i * BATCH + j}}:1`);
        const [sha, ...args] = groupsCall(algorithm, 1e9, 3_600_000, keys).evalsha;
        return r.admin.call('EVALSHA', sha as string, ...(args as (string | number)[]));
      },
    },
  ];
}

async function measure(redis: CountedRedis, variant: Variant, calls: number, warmup: number, offset: number): Promise<number> {
  for (let i = 0; i < warmup; i++) await variant.call(redis, offset + i);
  await redis.zero();
  // One call at a time: each is read, run and answered alone, as a call of one decision is.
  for (let i = 0; i < calls; i++) await variant.call(redis, offset + warmup + i);
  return (await redis.dump()) / calls;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: process.argv.slice(2).filter((a) => a !== '--'),
    options: { calls: { type: 'string' }, warmup: { type: 'string' }, algorithm: { type: 'string' }, hz: { type: 'string' } },
    strict: true,
  });
  const calls = Number(values.calls ?? 1000);
  const warmup = Number(values.warmup ?? 200);
  const algorithm = (values.algorithm ?? DEFAULT_ALGORITHM) as AlgorithmName;
  const dir = mkdtempSync(join(tmpdir(), 'floodgate-callgrind-'));
  const redis = await startCountedRedis(dir, 'redis');
  try {
    // The counted redis-server starts with hz 1 (instructions-callgrind.ts); --hz to compare another.
    if (values.hz !== undefined) await redis.admin.config('SET', 'hz', values.hz);
    const shas = new Map<string, string>();
    const lines = ['| call | redis-server instructions per call | per decision |', '| --- | --- | --- |'];
    const list = variants(algorithm, (source) => shas.get(source)!);
    // Floodgate's script is loaded by its first EVALSHA's NOSCRIPT path in RedisStore; here, once, up front.
    await redis.admin.script('LOAD', scriptCall(algorithm, 1e9, 3_600_000, 'x').source);
    // A call of several subjects goes to another script (the lean one) than a call of one decision (the one-decision script).
    await redis.admin.script('LOAD', groupsCall(algorithm, 1e9, 3_600_000, ['x', 'y']).source);
    for (const v of list) if (v.load) shas.set(v.load, (await redis.admin.script('LOAD', v.load)) as string);
    await redis.admin.call('FUNCTION', 'LOAD', 'REPLACE', asFunctionLibrary(scriptCall(algorithm, 1e9, 3_600_000, 'x').source, FUNCTION_NAME));
    let offset = 0;
    for (const v of list) {
      const ir = await measure(redis, v, calls, warmup, offset);
      offset += calls + warmup;
      lines.push(`| ${v.name} | ${(ir / 1000).toFixed(1)}k | ${(ir / (v.decisions ?? 1) / 1000).toFixed(1)}k |`);
      console.error(`${v.name}: ${Math.round(ir)}`);
    }
    console.log(`${calls} calls after ${warmup} (one at a time, ioredis), redis-server under callgrind, hz ${values.hz ?? '1'}:\n\n${lines.join('\n')}`);
  } finally {
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  main().then(
    () => process.exit(0),
    (error: Error) => {
      console.error(error.stack ?? error.message);
      process.exit(1);
    },
  );
}
