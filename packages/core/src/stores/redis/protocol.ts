// The Redis script protocol, defined once: scripts and hashes, KEYS/ARGV encoding, reply parsing, the NOSCRIPT path.
import { ALGORITHM, LIMIT_KINDS, periodArg, type LimitKind, type RegisteredAlgorithm, type StoreLimit } from '../../algorithms/registry';
import type { LimitResult } from '../../algorithms/types';
import { sha1Hex } from '../../base/digest';
import { FloodgateError, withoutStack } from '../../base/errors';
import { leaseToken, refundAt } from '../../base/validate';
import { SETTLE_OUTCOMES } from '../store';
import { LUA_LEAN, LUA_MAIN, LUA_ONE, LUA_PRELUDE } from '../../lua/scripts.generated';
import type { StoreRequest, StoreResult } from '../store';

/*
 * The protocol, which lua/main.lua implements. One call decides one or more requests of ONE
 * subject, on the same keys and limits, in arrival order, each all-or-nothing:
 *
 *   KEYS[i]   state key of limit i; all keys of one subject share one {hash tag}; with lock-out,
 *             the lock key last
 *   ARGV[1]   mode: 'c' consume, 'p' peek (evaluate only, never write), 'r' refund, 'x' release
 *             and 'n' renew a lease (lease limits only: algorithms/concurrency); then flags for
 *             what follows the limits: 'L' a lock-out spec, 'T' the UNSAFE test clock ('c', 'cL',
 *             'pT', 'rLT'). Production calls without lock-out carry none: no empty ARGV to pass.
 *   ARGV[2]   costs: one non-negative integer per request, comma-separated ('1' or '1,1,10'); for
 *             'r', each is `cost:at`, `at` the ms the refunded consume was decided ('1:1699999200000');
 *             for 'x' and 'n', and for a 'c' whose limits hold leases, `cost:token` ('1:Lk3j9x');
 *             for 's' (settle: rate limits only, the settle record's key last in KEYS),
 *             `delta:at:token`, delta = actual - reserved, possibly negative ('-3:1699999200000:Sk2');
 *             for 'h' (hold: a consume that shapes, rate limits only), `cost:maxDelayMs` ('1:2000')
 *   ARGV[3i..3i+2]  limit i (from 1): algorithm id (from the registry), capacity, period (periodArg:
 *             windowMs, refillPerSecond or leaseMs; for a calendar window, the boundaries of the
 *             periods around the caller's clock, 'b0,b1,b2,b3' in ms, of which the script picks the
 *             one holding its TIME)
 *   then      with 'L': 'after,baseMs,maxMs,forgetMs'; with 'O' (an override read, modes 'c' and
 *             'p'): its ceiling (0: none), the override key last in KEYS (after the lock key),
 *             and each limit's reply entry gains a fifth value, the capacity in force (main.lua's
 *             Override); with 's': withinMs (how long a reservation
 *             stays settleable); with 'T': the test clock in ms (last). Without
 *             'T' the script reads redis.call('TIME').
 *   reply     the script's clock in ms (`at`), then per request: allowedAll (0|1), lockedMs (ms left
 *             locked out, 0 when not), then per limit: allowed, remaining, resetMs, retryAfterMs (a
 *             refund: 1, what is left, its reset, 0). For 's', lockedMs is the settle's status:
 *             0 applied (allowedAll 1), 1 settled before, 2 too old (allowedAll 0). A request
 *             For 'h', an admitted request's lockedMs slot is its delay (ms until its reserved slot,
 *             0 when admitted now; see main.lua's Shaping). A request
 *             its subject's own error failed (see main.lua's Errors): allowedAll -1, the error's
 *             text where lockedMs goes, 0 per limit; parseReply makes it FG_STORE_SCRIPT
 *
 * Several subjects in one call (encodeGroups): the flag 'M' in ARGV[1] (with the mode, and 'T'),
 * then per group (one subject's requests, as above) its header, the limit count with 'L' when it
 * has a lock-out ('1', '2L'), its costs, its limits, its lock-out spec; or, with the limits of the
 * group before and no lock-out or override, '=' and its costs, or '+' alone for one request of cost
 * 1 (each ARGV costs Redis about 1k instructions a call); KEYS holds every group's
 * keys in order (each group's lock key after its own). The reply: one clock, then every group's
 * requests in order. Atomic like any script; on a Cluster every key must be in one slot, so the
 * store only groups subjects of one slot there (slotOf).
 *
 * encodeCall and encodeGroups write KEYS and ARGV, parseReply reads the reply; runScript sends them.
 *
 * Each script has a lean twin (lua/lean.lua for main.lua, without the chunks' refund, debit,
 * release and renew): the same protocol for its commonest shape alone, consume or peek with one
 * limit per subject, no lock-out and no override. Redis runs a script's whole body on every call,
 * so a call of that shape is sent to the lean one (leanOf) and pays for nothing it does not use.
 * Its reply leaves out allowedAll and lockedMs (with one limit and no lock-out, `allowed` and 0):
 * per request allowed, remaining, resetMs, retryAfterMs, or -1 and the error's text, 0, 0.
 *
 * Narrower still, each rate and window algorithm has a one-decision script (lua/one.lua,
 * `<name>/one`): a consume of ONE request with a plain cost, one subject, one limit, no lock-out or
 * override (oneCall), the call a request not coalesced with another makes. Straight code over the
 * algorithm's chunk, no write cache; its ARGV carries no mode and no algorithm id:
 *
 *   KEYS[1]   the state key
 *   ARGV      capacity, period (periodArg), the cost unless it is 1; with a test clock, the cost and
 *             the clock's reading in ms (3rd and 4th)
 *   reply     the lean reply of one request: the clock, allowed, remaining, resetMs, retryAfterMs
 */

/** One script per limit kind, run when every limit of a call uses it, a pair's (made when first used), and `all` for mixed limits. */
export type ScriptName = BaseScriptName | `${BaseScriptName}/lean` | `${LimitKind}/one`;
type BaseScriptName = LimitKind | 'all' | `${LimitKind}+${LimitKind}`;

export interface Script {
  readonly name: ScriptName;
  readonly source: string;
  /** SHA1 of the source, as EVALSHA wants it: computed when the module loads, never kept by hand. */
  readonly sha: string;
}

/**
 * The prelude without its optional helpers (each after an `-- optional: <name>` line, up to its
 * closing `end`) that no chunk of the script calls: Redis runs the whole script body on every call,
 * and every closure it defines is made again each time.
 */
function preludeFor(chunks: string, prelude = LUA_PRELUDE): string {
  return prelude.replace(/^-- optional: (\w+)\n[\s\S]*?^end\n/gm, (block: string, helper: string) =>
    new RegExp(`\\b${helper}\\(`).test(chunks) ? block : '',
  );
}

/** A chunk's functions that only modes other than consume and peek call: left out of a lean script. */
const UNUSED_WHEN_LEAN = /^local function (?:refund|debit|release|renew)\([^)]*\)\n[\s\S]*?^end\n/gm;

/** The prelude's tables of those functions: a lean script defines CHECK alone. */
const LEAN_TABLES: readonly [string, string][] = [
  ['local CHECK, REFUND, RELEASE, RENEW, DEBIT = {}, {}, {}, {}, {}\n', 'local CHECK = {}\n'],
  ['local HOLD = {}\n', ''],
];

/** `source` with each of `cuts` replaced; an error when one is not found (the .lua files changed under the composer). */
function cut(source: string, cuts: readonly [string, string][]): string {
  for (const [from, to] of cuts) {
    if (!source.includes(from)) throw new Error(`protocol.ts: the Lua prelude no longer has ${JSON.stringify(from)}; update LEAN_TABLES`);
    source = source.replace(from, to);
  }
  return source;
}

/** The prelude's write cache (from `-- cache:` to `-- cache: end`): a one-decision script writes straight to Redis. */
const CACHE_SECTION = /^-- cache:[\s\S]*?^-- cache: end\n/m;

/** The prelude's tables of the chunks' functions by id: a one-decision script calls its one chunk's check by name. */
const ONE_TABLES: readonly [string, string][] = [
  ['local CHECK, REFUND, RELEASE, RENEW, DEBIT = {}, {}, {}, {}, {}\n', ''],
  ['local HOLD = {}\n', ''],
];

/**
 * A one-decision script (see the top of this file): the prelude without its write cache, one.lua's
 * own helpers (those the chunk calls), the algorithm's chunk without refund and debit, one.lua's main.
 */
function composeOne(name: ScriptName, algorithm: RegisteredAlgorithm): Script {
  const at = LUA_ONE.indexOf('-- one: main');
  if (at < 0 || !CACHE_SECTION.test(LUA_PRELUDE)) throw new Error('protocol.ts: lua/one.lua or the prelude lost the markers composeOne cuts at');
  const chunk = algorithm.lua.replace(UNUSED_WHEN_LEAN, '');
  const main = LUA_ONE.slice(at);
  const prelude = preludeFor(chunk + main, cut(LUA_PRELUDE.replace(CACHE_SECTION, ''), ONE_TABLES));
  const source = [prelude, preludeFor(chunk, LUA_ONE.slice(0, at)), chunk, main].join('\n');
  return { name, source, sha: sha1Hex(source) };
}

/** Prelude, each algorithm's chunk in its own block with its check registered under its registry id, then main (or, `lean`, lean.lua). */
function compose(name: ScriptName, algorithms: readonly RegisteredAlgorithm[], lean = false): Script {
  const chunks = algorithms.map((a) =>
    lean
      ? `do\n${a.lua.replace(UNUSED_WHEN_LEAN, '')}CHECK['${a.id}'] = check\nend\n`
      : `do\n${a.lua}CHECK[${a.id}] = check\nREFUND[${a.id}] = refund\n${a.family === 'lease' ? `RELEASE[${a.id}] = release\nRENEW[${a.id}] = renew\n` : `DEBIT[${a.id}] = debit\n`}${a.family === 'rate' ? `HOLD[${a.id}] = debit\n` : ''}end\n`,
  );
  const main = lean ? LUA_LEAN : LUA_MAIN;
  const prelude = preludeFor(chunks.join('') + main);
  const source = [lean ? cut(prelude, LEAN_TABLES) : prelude, ...chunks, main].join('\n');
  ALGORITHMS_OF.set(name, algorithms);
  return { name, source, sha: sha1Hex(source) };
}

/** Each composed script's algorithms, by name: what its lean twin is composed from. */
const ALGORITHMS_OF = new Map<ScriptName, readonly RegisteredAlgorithm[]>();

/** A script's lean twin (see the top of this file), composed once. */
export function leanOf(script: Script): Script {
  // Asked per call: found by the script object, not by a name built and hashed each time.
  const known = LEAN_OF.get(script);
  if (known) return known;
  if (script.name.endsWith('/lean')) return script;
  const name = `${script.name}/lean` as ScriptName;
  let lean = LEAN.get(name);
  if (!lean) LEAN.set(name, (lean = compose(name, ALGORITHMS_OF.get(script.name)!, true)));
  LEAN_OF.set(script, lean);
  return lean;
}
const LEAN = new Map<ScriptName, Script>();
const LEAN_OF = new WeakMap<Script, Script>();

const FULL = [...LIMIT_KINDS.map((name) => compose(name, [ALGORITHM[name]])), compose('all', LIMIT_KINDS.map((name) => ALGORITHM[name]))];

/** Each rate and window algorithm's one-decision script, by algorithm (none for a lease: its consume carries a token). */
const ONE: Partial<Record<LimitKind, Script>> = Object.fromEntries(
  LIMIT_KINDS.filter((name) => ALGORITHM[name].family !== 'lease').map((name) => [name, composeOne(`${name}/one`, ALGORITHM[name])]),
);

/** Every algorithm's script and `all`, their lean twins (`<name>/lean`) and the one-decision scripts (`<name>/one`); a pair's are made when first used. */
export const SCRIPTS = Object.fromEntries([...FULL, ...FULL.map(leanOf), ...Object.values(ONE)].map((script) => [script.name, script])) as Readonly<Record<ScriptName, Script>>;

// A rate algorithm with a lease (a route with `concurrency`): that pair's own script, made once,
// rather than `all`, whose every chunk Redis would run through on each call.
const PAIRS = new Map<string, Script>();

/** The smallest script that holds every limit's algorithm: a single algorithm's own, an algorithm and the lease, else `all`. */
export function scriptFor(limits: readonly StoreLimit[]): Script {
  const first = limits[0].algorithm;
  let other: LimitKind | undefined;
  for (let i = 1; i < limits.length; i++) {
    const kind = limits[i].algorithm;
    if (kind === first || kind === other) continue;
    if (other !== undefined) return SCRIPTS.all;
    other = kind;
  }
  if (other === undefined) return SCRIPTS[first];
  const pair = [ALGORITHM[first], ALGORITHM[other]].sort((a, b) => a.id - b.id);
  const name = `${pair[0].name}+${pair[1].name}`;
  let script = PAIRS.get(name);
  if (!script) PAIRS.set(name, (script = compose(name as ScriptName, pair)));
  return script;
}

/** One script call, encoded: what to run, on which keys, with which ARGV, and the reply's expected size. */
export interface ScriptCall {
  readonly script: Script;
  readonly keys: readonly string[];
  readonly argv: readonly (string | number)[];
  readonly limitCount: number;
  readonly requestCount: number;
  /** Several subjects in one call ('M'): each group's limit and request counts, in order; the reply holds every group's. */
  readonly groups?: readonly { readonly limitCount: number; readonly requestCount: number; readonly override?: boolean }[];
  /** The call reads an override ('O'): each limit's reply entry has five values. */
  readonly override?: boolean;
  /** A settle call: the reply's lockedMs slot is the settle's status. */
  readonly settle?: boolean;
  /** A hold call (shaping): an admitted request's lockedMs slot is its delay. */
  readonly hold?: boolean;
  /** Sent to a lean script: each request's reply is its one limit's four values (see the top of this file). */
  readonly lean?: boolean;
  /** EVALSHA's arguments, every one a string, made once with the call (a call kept for its subject: see LONE). */
  readonly shaArgs?: readonly string[];
}

/**
 * A lone lean request's call (one consume or peek of one subject, one limit, no lock-out, override,
 * lease token, calendar window nor test clock) kept per keys array (a subject's, kept by its
 * limiter; held weakly), with its limits, cost and mode: its next request with the same ones is the
 * same call, ARGV and EVALSHA's arguments included, encoded and stringified once instead of per
 * call (about 1k instructions of a decision's: scripts/redis-decision-profile.mjs).
 */
interface LoneCall {
  readonly limits: readonly StoreLimit[];
  readonly cost: number;
  readonly mode: StoreRequest['mode'];
  readonly call: ScriptCall;
}
const LONE = new WeakMap<readonly string[], LoneCall>();

/** Whether a lone request's call may be kept (see LONE): a lean shape whose ARGV depends on nothing but its limits, cost and mode. */
function keepable(request: StoreRequest): boolean {
  if (request.token !== undefined || !leanShape(request, request.limits.length)) return false;
  const limit = request.limits[0];
  return !('windowMs' in limit && limit.calendar);
}

/** A kept call for a lone request, made once: its ARGV and EVALSHA's arguments as strings. */
function loneCall(request: StoreRequest): ScriptCall {
  const known = LONE.get(request.keys);
  if (known !== undefined && known.limits === request.limits && known.cost === request.cost && known.mode === request.mode) return known.call;
  const made = encodeCallOf([request], same);
  const argv = made.argv.map(String);
  const call: ScriptCall = { ...made, argv, shaArgs: evalArgs({ keys: made.keys, argv }, made.script.sha).map(String) };
  LONE.set(request.keys, { limits: request.limits, cost: request.cost, mode: request.mode, call });
  return call;
}

const MODE = { consume: 'c', peek: 'p', refund: 'r', release: 'x', renew: 'n', settle: 's', hold: 'h' } as const;

/** A request's entry in ARGV[2]: its cost, for a refund `cost:at`, and with a lease `cost:token`. */
function costArg(request: StoreRequest): string | number {
  if (request.mode === 'refund') return `${request.cost}:${refundAt(request.at)}`;
  if (request.mode === 'settle') return `${request.settle!.actual - request.cost}:${refundAt(request.at)}:${leaseToken(request.token)}`;
  if (request.mode === 'release' || request.mode === 'renew') return `${request.cost}:${leaseToken(request.token)}`;
  if (request.mode === 'hold') return `${request.cost}:${holdMs(request.maxDelayMs)}`;
  return request.mode === 'consume' && request.token !== undefined ? `${request.cost}:${leaseToken(request.token)}` : request.cost;
}

/**
 * Encodes requests that share keys, limits and mode (the first one's are sent) as one call.
 * `testNow`: the UNSAFE test clock's reading in ms; undefined in production (the script reads TIME).
 * `appNow`: the clock a calendar window's boundaries are computed around; default `testNow`, else
 * this process's clock (a test passes another to show that the script picks by its own TIME).
 */
export function encodeCall(requests: readonly StoreRequest[], testNow?: number, appNow?: number): ScriptCall {
  return encodeCallOf(requests, same, testNow, appNow);
}

const same = (request: StoreRequest): StoreRequest => request;

/** A group's ARGV entry of costs: one cost, or every request's, comma-separated. */
function costsArg<T>(items: readonly T[], requestOf: (item: T) => StoreRequest): string | number {
  if (items.length === 1) return costArg(requestOf(items[0]));
  // join makes one flat string (appending would make one string per request, flattened again when sent).
  const costs: (string | number)[] = new Array(items.length);
  for (let i = 0; i < items.length; i++) costs[i] = costArg(requestOf(items[i]));
  return costs.join(',');
}

/** encodeCall over items that each hold a request (`requestOf` reads it): the store's waiters, without an array of their requests per call. */
export function encodeCallOf<T>(items: readonly T[], requestOf: (item: T) => StoreRequest, testNow?: number, appNow?: number): ScriptCall {
  const request = requestOf(items[0]);
  if (items.length === 1) {
    const one = oneCall(request, testNow, appNow);
    if (one) return one;
  }
  const lock = request.lockout;
  const ov = request.override;
  // Each ARGV costs Redis an argument to parse and a Lua string to make on every call: send none empty.
  const argv: (string | number)[] = [MODE[request.mode] + (lock ? 'L' : '') + (ov ? 'O' : '') + (testNow !== undefined ? 'T' : ''), costsArg(items, requestOf)];
  // A calendar window's boundaries are computed around the test clock, else around this process's clock (the script picks by TIME).
  const at = appNow ?? testNow;
  const clock = at !== undefined ? () => at : Date.now;
  for (const limit of request.limits) argv.push(ALGORITHM[limit.algorithm].id, limit.capacity, periodArg(limit, clock));
  if (lock) argv.push(`${lock.after},${lock.baseMs},${lock.maxMs},${lock.forgetMs}`);
  if (ov) argv.push(ov.ceiling);
  const settle = request.mode === 'settle' ? settleOf(request) : undefined;
  if (settle) argv.push(settle.withinMs);
  if (testNow !== undefined) argv.push(testNow);
  let keys = lock ? [...request.keys, lock.key] : settle ? [...request.keys, settle.key] : request.keys;
  if (ov) keys = [...keys, ov.key];
  const limitCount = request.limits.length;
  if (leanShape(request, limitCount)) return { script: leanOf(scriptFor(request.limits)), keys, argv, limitCount, requestCount: items.length, lean: true };
  const script = scriptFor(request.limits);
  if (request.mode === 'hold') return ov ? { script, keys, argv, limitCount, requestCount: items.length, hold: true, override: true } : { script, keys, argv, limitCount, requestCount: items.length, hold: true };
  if (ov) return { script, keys, argv, limitCount, requestCount: items.length, override: true };
  return settle ? { script, keys, argv, limitCount, requestCount: items.length, settle: true } : { script, keys, argv, limitCount, requestCount: items.length };
}

/** A call of `request` alone to its algorithm's one-decision script (see the top of this file), when it has that shape; else undefined. */
function oneCall(request: StoreRequest, testNow?: number, appNow?: number): ScriptCall | undefined {
  if (request.mode !== 'consume' || request.token !== undefined || request.limits.length !== 1 || request.lockout || request.override) return undefined;
  const limit = request.limits[0];
  const script = ONE[limit.algorithm];
  if (!script) return undefined;
  const at = appNow ?? testNow;
  const period = periodArg(limit, at !== undefined ? () => at : Date.now);
  // The cost 1 (a request's default) is not sent: one ARGV fewer for Redis to read on every call.
  const argv = testNow !== undefined ? [limit.capacity, period, request.cost, testNow] : request.cost === 1 ? [limit.capacity, period] : [limit.capacity, period, request.cost];
  return { script, keys: request.keys, argv, limitCount: 1, requestCount: 1, lean: true };
}

/** Whether a group of requests like `request` can go to a lean script: consume or peek, one limit, no lock-out, no override. */
function leanShape(request: StoreRequest, limitCount: number): boolean {
  return (request.mode === 'consume' || request.mode === 'peek') && limitCount === 1 && !request.lockout && !request.override;
}

/** A hold's maxDelayMs, as the script takes it: a whole number of ms from 1 (FG_INVALID_OPTION otherwise: a bug in the caller). */
function holdMs(ms: number | undefined): number {
  if (!Number.isInteger(ms) || ms! < 1) throw new FloodgateError('FG_INVALID_OPTION', `Invalid hold request: maxDelayMs ${String(ms)}; expected a whole number of ms from 1.`);
  return ms!;
}

/** A settle request's own fields; FG_INVALID_OPTION when they are missing (a bug in the caller, never a client's doing). */
function settleOf(request: StoreRequest): NonNullable<StoreRequest['settle']> {
  const s = request.settle;
  if (!s || typeof s.key !== 'string' || !Number.isInteger(s.actual) || s.actual < 0 || !Number.isInteger(s.withinMs) || s.withinMs < 1) {
    throw new FloodgateError('FG_INVALID_OPTION', `Invalid settle request: ${JSON.stringify(s)}; expected { key, actual (whole, from 0), withinMs (whole, from 1) }.`);
  }
  return s;
}

/**
 * Several subjects' requests in one call: each group shares keys, limits and mode (as encodeCall's
 * requests do), every group the same mode and script (the caller groups by both), and, with a
 * test clock, the same `testNow`. One group is encoded as encodeCall encodes it.
 */
export function encodeGroups(groups: readonly (readonly StoreRequest[])[], testNow?: number, appNow?: number): ScriptCall {
  return encodeGroupsOf(groups, same, testNow, appNow);
}

/** encodeGroups over items that each hold a request (`requestOf` reads it), as encodeCallOf. */
export function encodeGroupsOf<T>(groups: readonly (readonly T[])[], requestOf: (item: T) => StoreRequest, testNow?: number, appNow?: number): ScriptCall {
  if (groups.length === 1) {
    const items = groups[0];
    if (items.length === 1 && testNow === undefined && appNow === undefined) {
      const request = requestOf(items[0]);
      if (keepable(request)) return loneCall(request);
    }
    return encodeCallOf(items, requestOf, testNow, appNow);
  }
  const first = requestOf(groups[0][0]);
  // A settle carries its marker key and window per call: one subject a call (RedisStore never groups them).
  if (first.mode === 'settle') throw new FloodgateError('FG_INVALID_OPTION', 'Settle requests of several subjects cannot share a script call.');
  const at = appNow ?? testNow;
  const clock = at !== undefined ? () => at : Date.now;
  const argv: (string | number)[] = [MODE[first.mode] + 'M' + (testNow !== undefined ? 'T' : '')];
  const keys: string[] = [];
  const shapes: { limitCount: number; requestCount: number; override?: boolean }[] = new Array(groups.length);
  let requestCount = 0;
  let lean = true;
  let previous: readonly StoreLimit[] | undefined;
  for (let g = 0; g < groups.length; g++) {
    const items = groups[g];
    const request = requestOf(items[0]);
    const lock = request.lockout;
    const ov = request.override;
    const limits = request.limits;
    if (lean && !leanShape(request, limits.length)) lean = false;
    if (limits === previous && !lock && !ov) {
      // The same limits as the group before (one limiter's subjects: the common call): '=' and the
      // costs, not three ARGV per limit again (each one a bulk string for Redis to read and a Lua
      // string to make, on every call); '+' alone for one request of cost 1, the commonest group.
      const costs = costsArg(items, requestOf);
      if (costs === 1) argv.push('+');
      else argv.push('=', costs);
    } else {
      argv.push(lock || ov ? `${limits.length}${lock ? 'L' : ''}${ov ? 'O' : ''}` : limits.length, costsArg(items, requestOf));
      for (let i = 0; i < limits.length; i++) argv.push(ALGORITHM[limits[i].algorithm].id, limits[i].capacity, periodArg(limits[i], clock));
      if (lock) argv.push(`${lock.after},${lock.baseMs},${lock.maxMs},${lock.forgetMs}`);
      if (ov) argv.push(ov.ceiling);
      previous = limits;
    }
    for (let i = 0; i < request.keys.length; i++) keys.push(request.keys[i]);
    if (lock) keys.push(lock.key);
    if (ov) keys.push(ov.key);
    shapes[g] = ov ? { limitCount: limits.length, requestCount: items.length, override: true } : { limitCount: limits.length, requestCount: items.length };
    requestCount += items.length;
  }
  if (testNow !== undefined) argv.push(testNow);
  const script = scriptFor(first.limits);
  if (lean) return { script: leanOf(script), keys, argv, limitCount: 1, requestCount, groups: shapes, lean: true };
  const call = { script, keys, argv, limitCount: shapes[0].limitCount, requestCount, groups: shapes };
  return first.mode === 'hold' ? { ...call, hold: true } : call;
}

/** The arguments of EVALSHA (`head` the sha) or EVAL (`head` the source): numkeys, keys, then ARGV. */
export type EvalArgs = [head: string, numKeys: number, ...keysAndArgv: (string | number)[]];

/** What a client is sent: EvalArgs, or the same arguments every one a string (numKeys too: a kept call's, see LONE). */
export type SentArgs = EvalArgs | readonly string[];

export function evalArgs(call: Pick<ScriptCall, 'keys' | 'argv'>, head: string): EvalArgs {
  // Made at its final length and filled: spreading into a literal grows it (and copies) as it goes,
  // which for a call of many subjects is several arrays of garbage per call.
  const { keys, argv } = call;
  const args = new Array<string | number>(2 + keys.length + argv.length);
  args[0] = head;
  args[1] = keys.length;
  for (let i = 0; i < keys.length; i++) args[2 + i] = keys[i];
  for (let i = 0, at = 2 + keys.length; i < argv.length; i++) args[at + i] = argv[i];
  return args as EvalArgs;
}

/**
 * A request the script could not decide because of its subject's own error (main.lua's Errors: a
 * Lua error on its state or cost, a key of another type): its answer alone, never its call's.
 * Not a store failure (failure/guard.ts): the limiter decides it locally. Made without a stack: an
 * attacker may cause one per request.
 */
export function scriptError(said: string): FloodgateError {
  const text = said.length > 300 ? `${said.slice(0, 300)}...` : said;
  return withoutStack(
    () => new FloodgateError('FG_STORE_SCRIPT', `The Redis script failed for this request's subject (${text}); the other requests of its call were decided.`),
  );
}

/** A request's answer in a call's reply: its result, or its subject's own script error. */
export type ReplyEntry = StoreResult | FloodgateError;

/** One result per request, in order (every group's, in order); FG_STORE_REPLY when the reply is not what the call asked for. */
export function parseReply(reply: unknown, call: Pick<ScriptCall, 'limitCount' | 'requestCount' | 'groups' | 'settle' | 'hold' | 'override' | 'lean'>): ReplyEntry[] {
  if (call.lean) return parseLeanReply(reply, call.requestCount);
  const groups = call.groups ?? [call];
  let expected = 1;
  let requests = 0;
  for (const g of groups) {
    expected += (2 + (g.override ? 5 : 4) * g.limitCount) * g.requestCount;
    requests += g.requestCount;
  }
  if (!Array.isArray(reply) || reply.length !== expected) {
    throw new FloodgateError('FG_STORE_REPLY', `Unexpected script reply: ${JSON.stringify(reply)}`);
  }
  const now = Number(reply[0]);
  // Arrays made at their final length: pushing onto [] would allocate room for 16 and copy on growth.
  const out: ReplyEntry[] = new Array(requests);
  let head = 1;
  let o = 0;
  for (const g of groups) {
    const width = g.override ? 5 : 4;
    const size = 2 + width * g.limitCount;
    for (let r = 0; r < g.requestCount; r++, head += size) {
      if (reply[head] === -1) {
        out[o++] = scriptError(String(reply[head + 1]));
        continue;
      }
      const results: LimitResult[] = new Array(g.limitCount);
      for (let i = 0; i < g.limitCount; i++) {
        const at = head + 2 + width * i;
        results[i] =
          width === 5
            ? { allowed: reply[at] === 1, remaining: Number(reply[at + 1]), resetMs: Number(reply[at + 2]), retryAfterMs: Number(reply[at + 3]), limit: Number(reply[at + 4]) }
            : { allowed: reply[at] === 1, remaining: Number(reply[at + 1]), resetMs: Number(reply[at + 2]), retryAfterMs: Number(reply[at + 3]) };
      }
      const lockedMs = Number(reply[head + 1]);
      if (call.hold && reply[head] === 1) out[o++] = lockedMs > 0 ? { at: now, allowed: true, results, delayMs: lockedMs } : { at: now, allowed: true, results };
      else if (call.settle) out[o++] = { at: now, allowed: reply[head] === 1, results, settled: SETTLE_OUTCOMES[lockedMs] ?? 'expired' };
      else out[o++] = lockedMs > 0 ? { at: now, allowed: false, results, lockedMs } : { at: now, allowed: reply[head] === 1, results };
    }
  }
  return out;
}

/** A lean script's reply (see the top of this file): the clock, then four values per request. */
function parseLeanReply(reply: unknown, requests: number): ReplyEntry[] {
  if (!Array.isArray(reply) || reply.length !== 1 + 4 * requests) {
    throw new FloodgateError('FG_STORE_REPLY', `Unexpected script reply: ${JSON.stringify(reply)}`);
  }
  const now = Number(reply[0]);
  const out: ReplyEntry[] = new Array(requests);
  for (let r = 0, at = 1; r < requests; r++, at += 4) {
    const allowed = reply[at];
    out[r] =
      allowed === -1
        ? scriptError(String(reply[at + 1]))
        : { at: now, allowed: allowed === 1, results: [{ allowed: allowed === 1, remaining: Number(reply[at + 1]), resetMs: Number(reply[at + 2]), retryAfterMs: Number(reply[at + 3]) }] };
  }
  return out;
}

/**
 * All the protocol needs of a Redis client: send one command with its arguments and resolve with
 * the raw reply, or reject with the server's error (whose message starts with its code, 'NOSCRIPT
 * ...'). Integer replies as numbers. A new client (node-redis, ...) plugs in here, and only here.
 */
export type SendCommand = (command: 'EVALSHA' | 'EVAL', args: SentArgs) => Promise<unknown>;

/**
 * EVALSHA; on NOSCRIPT only, EVAL once (which also loads the script). Never retried otherwise, and
 * never once `expired()` (the caller's deadline passed): a late NOSCRIPT (e.g. a client resending to
 * a restarted Redis) must not be followed by an EVAL that would count a request already answered.
 */
export async function runScript(send: SendCommand, call: ScriptCall, expired: () => boolean): Promise<unknown> {
  try {
    return await send('EVALSHA', evalArgs(call, call.script.sha));
  } catch (error) {
    if (!expired() && error instanceof Error && error.message.startsWith('NOSCRIPT')) {
      return send('EVAL', evalArgs(call, call.script.source));
    }
    throw error;
  }
}
