// One parser per header dialect: draft-10 (and 8/9) lists, draft-7's dictionary, draft-6's fields, X-RateLimit-*.
import { parseDictionary, parseList, Token, type BareItem, type Item, type List, type Parameters } from 'structured-headers';
import type { FieldLookup } from './header-source';
import { nonNegativeNumber, resetToMs, type ResetConvention } from './time-fields';

/** Which convention a response's quota fields were read in. */
export type Dialect = 'draft-10' | 'draft-7' | 'draft-6' | 'x-ratelimit';

/** The draft's quota units ("requests" the default); other strings pass through as the server sent them. */
export type QuotaUnit = 'requests' | 'content-bytes' | 'concurrent-requests' | (string & {});

/** One quota as one response describes it. Every field the response did not give is left out. */
export interface QuotaObservation {
  /** The policy's name; '' for the dialects that name none (draft-6, draft-7, X-RateLimit-*). */
  readonly policy: string;
  /** The partition key (`pk`, base64 as sent), when the server sends one. */
  readonly partition?: string;
  readonly unit: QuotaUnit;
  /** The quota (`q`, `limit`, `RateLimit-Limit`). */
  readonly limit?: number;
  /** The window the quota applies to, in ms (`w`). */
  readonly windowMs?: number;
  /** Units left (`r`, `remaining`). */
  readonly remaining?: number;
  /** Ms from the response until quota comes back (`t`, `reset`), never negative. */
  readonly resetMs?: number;
  /** How the reset was read (delta seconds, Unix seconds or Unix ms: see resetToMs). */
  readonly resetConvention?: ResetConvention;
  /**
   * A whole number of Unix seconds only: ms until the START of the second it names (`resetMs` is its
   * end, 1000 ms later, or 0 when both have passed). The moment itself when the server rounded it up
   * (Floodgate, express-rate-limit); up to a second early when it rounded down (koa-ratelimit). The
   * pacer reads this one until a request it timed by it is refused (docs/client.md).
   */
  readonly resetStartMs?: number;
}

interface Clock {
  readonly nowMs: number;
  readonly dateMs?: number;
}

/** A list field, or undefined when absent or malformed (the draft: malformed fields MUST be ignored). */
function list(text: string | undefined): List | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  try {
    return parseList(text);
  } catch {
    return undefined;
  }
}

function count(value: BareItem | undefined): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
}

function name(value: BareItem): string | undefined {
  if (typeof value === 'string') return value;
  if (value instanceof Token) return value.toString();
  return undefined;
}

/** Base64 of some bytes with btoa, which Node and browsers both have (the client also runs in a page). */
function base64(bytes: Uint8Array): string {
  let text = '';
  for (let i = 0; i < bytes.length; i++) text += String.fromCharCode(bytes[i]);
  return btoa(text);
}

function partitionKey(value: BareItem | undefined): string | undefined {
  if (value instanceof ArrayBuffer) return base64(new Uint8Array(value));
  if (ArrayBuffer.isView(value)) return base64(new Uint8Array(value.buffer, value.byteOffset, value.byteLength));
  // Some servers send the key as a String or Token: still a key.
  if (typeof value === 'string' || value instanceof Token) return String(value);
  return undefined;
}

function items(l: List): Item[] {
  // Inner lists have no meaning in these fields: skipped, as malformed members.
  return l.filter((member): member is Item => !Array.isArray(member[0]));
}

function reset(value: number | undefined, clock: Clock): Pick<QuotaObservation, 'resetMs' | 'resetConvention' | 'resetStartMs'> {
  if (value === undefined) return {};
  const { ms, convention } = resetToMs(value, clock.nowMs, clock.dateMs);
  // resetToMs took a whole Unix second as its end: its start is a second sooner (never below 0).
  if (convention === 'epoch-seconds' && Number.isInteger(value)) return { resetMs: ms, resetConvention: convention, resetStartMs: Math.max(0, ms - 1000) };
  return { resetMs: ms, resetConvention: convention };
}

function unitOf(params: Parameters): QuotaUnit {
  const qu = params.get('qu');
  const unit = typeof qu === 'string' || qu instanceof Token ? String(qu) : 'requests';
  // Earlier revisions of the draft said "request" and "concurrency": the same units.
  if (unit === 'request') return 'requests';
  if (unit === 'concurrency') return 'concurrent-requests';
  return unit;
}

function windowMs(params: Parameters): number | undefined {
  const w = count(params.get('w'));
  return w === undefined ? undefined : w * 1000;
}

function defined<T extends object>(o: T): T {
  for (const key of Object.keys(o) as (keyof T)[]) if (o[key] === undefined) delete o[key];
  return o;
}

/**
 * The quota available now: `r` (drafts 8 to 11), or `a`, the name an open change to draft-11 gives it.
 * A server that sends both, differing, is believed for the smaller: the client never sends more than
 * either says it may.
 */
function available(params: Parameters): number | undefined {
  const r = count(params.get('r'));
  const a = count(params.get('a'));
  return r === undefined ? a : a === undefined ? r : Math.min(r, a);
}

/**
 * Seconds until more quota is available: draft-10's `t` as revised (httpapi issue #149: "until
 * additional quota is made available", not "until the quota resets") and draft-11's effective window,
 * or `w`, the name the open change gives it in the RateLimit field (in RateLimit-Policy, `w` stays the
 * policy's window). Both sent and differing: the later, never early. The pacer believes it up to
 * maxHoldMs, whatever it says.
 */
function effectiveWindow(params: Parameters): number | undefined {
  const t = count(params.get('t'));
  const w = count(params.get('w'));
  return t === undefined ? w : w === undefined ? t : Math.max(t, w);
}

/** Floodgate's vendor parameter: `t` in whole ms (packages/core's format-headers.ts, T_MS_PARAM). */
const T_MS = 'floodgate-t-ms';

/**
 * The effective window in seconds, to the ms when the item carries `floodgate-t-ms` and it agrees
 * with the whole seconds (`t`, or the later of `t` and `w`): ceil(ms / 1000) equals them. A value
 * that does not agree (a proxy that rewrote `t`, another server's parameter of the same name) is
 * ignored, and the whole seconds are read as before: never earlier than `t` says by a second or more.
 */
function preciseWindow(params: Parameters, seconds: number | undefined): number | undefined {
  const ms = count(params.get(T_MS));
  if (seconds === undefined || ms === undefined || !Number.isInteger(ms) || Math.ceil(ms / 1000) !== seconds) return seconds;
  return ms / 1000;
}

/**
 * draft-ietf-httpapi-ratelimit-headers-08 to -11: `RateLimit-Policy: "name";q=;qu=;w=;pk=` and
 * `RateLimit: "name";r=;t=;pk=` (or `a=;w=`, the names an open change to draft-11 proposes), every
 * policy listed, paired by name and partition key. A RateLimit
 * item with no policy item still counts (its limit unknown); a policy item with no RateLimit item
 * keeps its quota (a concurrency cap is read from `q`). Undefined when neither field is a list of
 * named items.
 */
export function parseDraft10(get: FieldLookup, clock: Clock): QuotaObservation[] | undefined {
  const policyField = list(get('ratelimit-policy'));
  const limitField = list(get('ratelimit'));
  const policies = new Map<string, { policy: string; partition?: string; params: Parameters }>();
  const order: string[] = [];
  const keyOf = (policy: string, partition: string | undefined) => `${policy}\u0000${partition ?? ''}`;
  for (const [value, params] of policyField ? items(policyField) : []) {
    const policy = name(value);
    if (policy === undefined || count(params.get('q')) === undefined) continue;
    const partition = partitionKey(params.get('pk'));
    const key = keyOf(policy, partition);
    if (!policies.has(key)) order.push(key);
    policies.set(key, { policy, partition, params });
  }
  const out: QuotaObservation[] = [];
  const used = new Set<string>();
  for (const [value, params] of limitField ? items(limitField) : []) {
    const policy = name(value);
    const remaining = available(params);
    if (policy === undefined || remaining === undefined) continue;
    const partition = partitionKey(params.get('pk'));
    // With a pk, its own policy item; without one, the first policy item of that name.
    const key = partition !== undefined ? keyOf(policy, partition) : order.find((k) => policies.get(k)!.policy === policy);
    const declared = key !== undefined ? policies.get(key) : undefined;
    if (key !== undefined && declared) used.add(key);
    out.push(
      defined({
        policy,
        partition: partition ?? declared?.partition,
        unit: declared ? unitOf(declared.params) : unitOf(params),
        limit: declared ? count(declared.params.get('q')) : undefined,
        windowMs: declared ? windowMs(declared.params) : undefined,
        remaining,
        ...reset(preciseWindow(params, effectiveWindow(params)), clock),
      }),
    );
  }
  for (const key of order) {
    if (used.has(key)) continue;
    const { policy, partition, params } = policies.get(key)!;
    out.push(defined({ policy, partition, unit: unitOf(params), limit: count(params.get('q')), windowMs: windowMs(params) }));
  }
  return out.length > 0 ? out : undefined;
}

/**
 * draft-ietf-httpapi-ratelimit-headers-07: `RateLimit: limit=10, remaining=9, reset=2` (a Dictionary)
 * with `RateLimit-Policy: 10;w=2`. Undefined unless RateLimit is a dictionary with one of those keys.
 */
export function parseDraft7(get: FieldLookup, clock: Clock): QuotaObservation[] | undefined {
  const text = get('ratelimit');
  if (text === undefined) return undefined;
  let dict: ReturnType<typeof parseDictionary>;
  try {
    dict = parseDictionary(text);
  } catch {
    return undefined;
  }
  const member = (key: string): number | undefined => {
    const m = dict.get(key);
    return m && !Array.isArray(m[0]) ? count(m[0] as BareItem) : undefined;
  };
  const limit = member('limit');
  const remaining = member('remaining');
  const resetValue = member('reset');
  if (limit === undefined && remaining === undefined && resetValue === undefined) return undefined;
  return [defined({ policy: '', unit: 'requests', limit, windowMs: policyWindow(get, limit), remaining, ...reset(resetValue, clock) })];
}

/** draft-6/7's `RateLimit-Policy: 10;w=2, 100;w=60`: the window of the item whose quota is the limit. */
function policyWindow(get: FieldLookup, limit: number | undefined): number | undefined {
  const field = list(get('ratelimit-policy'));
  if (!field) return undefined;
  const all = items(field).filter(([value]) => count(value) !== undefined);
  const match = all.find(([value]) => value === limit) ?? (limit === undefined ? all[0] : undefined);
  return match ? windowMs(match[1]) : undefined;
}

/** The leading number of a field (draft-3 to 5 let RateLimit-Limit carry `10, 10;w=1`: the first is the limit). */
function leading(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  return nonNegativeNumber(text.split(/[,;]/, 1)[0]);
}

/**
 * draft-ietf-httpapi-ratelimit-headers-06 (and 3 to 5): `RateLimit-Limit`, `RateLimit-Remaining`,
 * `RateLimit-Reset`, with the window from `RateLimit-Policy` when sent. The reset is delta seconds by
 * the draft; a Unix time is still read as one (resetToMs's rule), since some servers send that.
 */
export function parseDraft6(get: FieldLookup, clock: Clock): QuotaObservation[] | undefined {
  return threeFields(get, clock, 'ratelimit-', true);
}

/**
 * `X-RateLimit-Limit`, `-Remaining`, `-Reset`: the reset is delta seconds (@fastify/rate-limit), a Unix
 * time in seconds (GitHub, express-rate-limit, Floodgate's legacy dialect; koa-ratelimit rounds it
 * down) or, from some APIs, in ms: resetToMs tells them apart by size.
 */
export function parseXRateLimit(get: FieldLookup, clock: Clock): QuotaObservation[] | undefined {
  return threeFields(get, clock, 'x-ratelimit-', false);
}

function threeFields(get: FieldLookup, clock: Clock, prefix: string, withPolicy: boolean): QuotaObservation[] | undefined {
  const limit = leading(get(`${prefix}limit`));
  const remaining = leading(get(`${prefix}remaining`));
  const resetValue = leading(get(`${prefix}reset`));
  if (limit === undefined && remaining === undefined && resetValue === undefined) return undefined;
  return [
    defined({
      policy: '',
      unit: 'requests',
      limit,
      windowMs: withPolicy ? policyWindow(get, limit) : undefined,
      remaining,
      ...preciseReset(reset(resetValue, clock), get(RESET_MS_FIELD)),
    }),
  ];
}

/** Floodgate's field beside the integer dialects: their reset in whole ms from the response (core's format-headers.ts). */
const RESET_MS_FIELD = 'floodgate-reset-ms';

/**
 * The reset to the ms when the response carries `Floodgate-Reset-Ms` and it agrees with the whole
 * seconds: no later than the reset they name read at its latest (`resetMs`), and within the second
 * before it for delta seconds (rounded up), the two seconds before it for a Unix second (rounded up
 * by the server, read to its end by resetToMs). A value that does not agree (garbage, a field another hop set) is
 * ignored and the whole seconds are read as before. Against a sliding window whose next unit is
 * 200 ms away, whole seconds make a pacer sleep through units that expire unused (issue #46).
 */
function preciseReset(whole: ReturnType<typeof reset>, field: string | undefined): ReturnType<typeof reset> {
  const ms = nonNegativeNumber(field);
  const span = whole.resetConvention === 'epoch-seconds' ? 2000 : 1000;
  if (whole.resetMs === undefined || ms === undefined || !Number.isInteger(ms) || ms > whole.resetMs || ms <= whole.resetMs - span) return whole;
  return { resetMs: ms, resetConvention: whole.resetConvention };
}
