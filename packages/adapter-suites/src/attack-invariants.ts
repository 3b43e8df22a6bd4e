// The generated attack suite's invariants over one run's answers: admitted at most the limit per real caller (or verified key) and route, per account, and every 429 with its headers.
import type { AttackRequest, Target } from './attack-arbitraries';
import { callerOf, fill, ISSUED_KEY, type RunPools, type WireAnswer } from './attack-wire';

/** The app's routes: pattern and the limit of each (gcra with a one-hour refill: exactly this many per caller in a run). */
export const ROUTES = {
  all: { pattern: '/all', limit: 3 },
  items: { pattern: '/items/:id', limit: 3 },
  login: { pattern: '/login', limit: 4 },
  cost: { pattern: '/cost', limit: 5 },
  rawcost: { pattern: '/rawcost', limit: 5 },
} as const;
export const UNMATCHED = '<unmatched>';
export const UNMATCHED_LIMIT = 3;
/** The login route's per-account limit (an extra key on the body's `username`). */
export const ACCOUNT_LIMIT = 2;

/** The /cost route's cost function, as an app that bounds client input writes it: an x-cost of 0 to 6, else 1. */
export function costOf(header: unknown): number {
  const n = Number.parseInt(String(header ?? '1'), 10);
  return Number.isInteger(n) && n >= 0 && n <= 6 ? n : 1;
}

/**
 * The /rawcost route's cost function: the header as a number, unchecked, so that the limiter's own
 * check of a cost (FG_INVALID_COST for anything but a whole number from 0 to 1e9) meets client input.
 */
export const rawCostOf = (header: unknown): number => Number(header ?? '1');

/** The units a request to `target` costs as the model counts them: 0 for a cost the limiter refuses (it is never admitted). */
function unitsOf(target: Target, header: string | null): number {
  if (target === 'cost') return costOf(header);
  if (target !== 'rawcost') return 1;
  const c = rawCostOf(header);
  return Number.isInteger(c) && c >= 0 && c <= 1e9 ? c : 0;
}

/**
 * The account a login request names, as the model tells accounts apart: none for a missing, null
 * or empty username or an unparsed body; a string and a number by their text; anything else by its
 * JSON. Never coarser than the limiter's own keying should be, so a split here is a real one.
 */
export function accountOf(r: AttackRequest, pools: RunPools): string | undefined {
  if (!r.body || r.body.malformed || r.body.contentType === null) return undefined;
  const u = fill(r.body.username, pools);
  if (u === undefined || u === null || u === '') return undefined;
  return typeof u === 'string' || typeof u === 'number' ? `s:${String(u)}` : `j:${JSON.stringify(u)}`;
}

const header = (a: WireAnswer, name: string) => a.headers.filter(([n]) => n.toLowerCase() === name).map(([, v]) => v);
const limitOf = (pattern: string) => Object.values(ROUTES).find((r) => r.pattern === pattern)?.limit ?? UNMATCHED_LIMIT;

/** The route pattern whose handler answered (its JSON names it), if one did. */
function servedBy(a: WireAnswer): string | undefined {
  if (!a.body.startsWith('{')) return undefined;
  try {
    const route = (JSON.parse(a.body) as { route?: unknown }).route;
    return typeof route === 'string' ? route : undefined;
  } catch {
    return undefined;
  }
}

/** The real caller's subject as the design keys it: IPv4 (v4-mapped too) by address, IPv6 by its /64. */
function subjectOf(r: AttackRequest, pools: RunPools): string {
  const { index } = callerOf(r, pools);
  return `caller ${index} (${pools.callers[index].base})`;
}

/** One admitted request the limiter counted: the buckets it may have been counted in and its weight. */
interface Counted {
  readonly index: number;
  readonly buckets: readonly string[];
  readonly weight: number;
}

/** Admitted and counted by a limiter: any answer but 429 that carries the quota headers. */
export const counted = (a: WireAnswer) => a.status !== 429 && a.status !== 0 && header(a, 'ratelimit-limit').length > 0;

function countedOf(requests: readonly AttackRequest[], answers: readonly WireAnswer[], pools: RunPools): Counted[] {
  const out: Counted[] = [];
  requests.forEach((r, index) => {
    const a = answers[index];
    if (!counted(a)) return;
    const served = servedBy(a);
    const target: Target = r.target;
    const patterns = served ? [served] : [...new Set([target === 'unmatched' ? UNMATCHED : ROUTES[target].pattern, UNMATCHED])];
    const subjects = [subjectOf(r, pools), ...r.keys.map(([, v]) => fill(v, pools) as string).flatMap((v) => v.split(/[\s,]+/)).filter((k) => ISSUED_KEY.test(k)).map((k) => `key ${k}`)];
    // Its own cost where its route answered; where that is not known, at most 1 (the least it can have cost).
    const own = target !== 'unmatched' && served === ROUTES[target].pattern;
    const weight = own ? unitsOf(target, r.cost) : Math.min(1, unitsOf(target, r.cost));
    out.push({ index, buckets: patterns.flatMap((p) => subjects.map((s) => `${p} | ${s}`)), weight });
  });
  return out;
}

/**
 * Whether the counted requests fit the buckets: a flow from each request (its weight) to any
 * bucket it may have been counted in (each holding its route's limit) that carries every unit.
 * Fractional, so a relaxation: when even this does not fit, no assignment does.
 */
function fits(items: readonly Counted[]): boolean {
  const capacity = new Map<string, number>();
  for (const item of items) for (const b of item.buckets) capacity.set(b, limitOf(b.split(' | ')[0]));
  const load = new Map<string, number>();
  const assigned = items.map(() => new Map<string, number>());
  // Augmenting paths, one unit at a time (weights and limits are small).
  const augment = (i: number, seen: Set<number>): boolean => {
    seen.add(i);
    for (const b of items[i].buckets) {
      if ((load.get(b) ?? 0) < capacity.get(b)!) {
        load.set(b, (load.get(b) ?? 0) + 1);
        assigned[i].set(b, (assigned[i].get(b) ?? 0) + 1);
        return true;
      }
    }
    for (const b of items[i].buckets) {
      for (let j = 0; j < items.length; j++) {
        if (seen.has(j) || !(assigned[j].get(b) ?? 0) || !augment(j, seen)) continue;
        // j moved one unit elsewhere: this bucket has room for i's unit.
        assigned[j].set(b, assigned[j].get(b)! - 1);
        assigned[i].set(b, (assigned[i].get(b) ?? 0) + 1);
        return true;
      }
    }
    return false;
  };
  return items.every((item, i) => Array.from({ length: item.weight }, () => augment(i, new Set())).every(Boolean));
}

/** Invariant 1: admitted at most the limit per real caller or verified key, per route pattern, and per account on /login. */
export function limitViolations(requests: readonly AttackRequest[], answers: readonly WireAnswer[], pools: RunPools): string[] {
  const problems: string[] = [];
  const items = countedOf(requests, answers, pools);
  if (!fits(items)) {
    // Grouped by the buckets each may have counted in (an answer no handler gave may be its route's or `<unmatched>`).
    const byBucket = new Map<string, number[]>();
    for (const item of items) {
      const where = item.buckets.map((b) => `${b} (limit ${limitOf(b.split(' | ')[0])})`).join(' or ');
      byBucket.set(where, [...(byBucket.get(where) ?? []), item.index]);
    }
    const lines = [...byBucket].map(([where, idx]) => `  ${where}: admitted #${idx.join(', #')}`);
    problems.push(`more admitted than the limits allow, however the admitted requests are assigned to their callers' buckets:\n${lines.join('\n')}`);
  }
  const perAccount = new Map<string, number[]>();
  requests.forEach((r, i) => {
    const account = counted(answers[i]) && servedBy(answers[i]) === ROUTES.login.pattern ? accountOf(r, pools) : undefined;
    if (account !== undefined) perAccount.set(account, [...(perAccount.get(account) ?? []), i]);
  });
  for (const [account, idx] of perAccount) {
    if (idx.length > ACCOUNT_LIMIT) problems.push(`account ${account} on /login: admitted ${idx.length} (#${idx.join(', #')}), its limit is ${ACCOUNT_LIMIT}`);
  }
  return problems;
}

/** Invariant 4: every 429 carries its headers once each (draft-6 and Retry-After, none for a cost that can never fit), every answer a route's handler gave carries the quota headers, and one that leaves nothing names a reset of at least 1 s. */
export function headerViolations(requests: readonly AttackRequest[], answers: readonly WireAnswer[]): string[] {
  const problems: string[] = [];
  answers.forEach((a, i) => {
    const r = requests[i];
    const one = (name: string) => {
      const values = header(a, name);
      if (values.length !== 1 || !/^\d+$/.test(values[0])) problems.push(`#${i} ${a.status}: ${name} ${values.length === 0 ? 'missing' : `is ${JSON.stringify(values)}`}`);
      return Number(values[0]);
    };
    if (a.status === 429) {
      one('ratelimit-limit');
      one('ratelimit-remaining');
      const reset = one('ratelimit-reset');
      // A cost above /cost's limit can never fit: its 429 has no Retry-After (docs/headers.md). Whether /cost decided
      // (and not `<unmatched>`, for a spelling no route serves) shows in the limit it names.
      const neverFits = (r.target === 'cost' || r.target === 'rawcost') && unitsOf(r.target, r.cost) > ROUTES.cost.limit && header(a, 'ratelimit-limit')[0] === String(ROUTES.cost.limit);
      if (neverFits) {
        if (header(a, 'retry-after').length > 0) problems.push(`#${i} 429 for a cost above the limit carries Retry-After`);
      } else {
        const retryAfter = one('retry-after');
        if (retryAfter < 1 || retryAfter < reset) problems.push(`#${i} 429: Retry-After ${retryAfter} is earlier than RateLimit-Reset ${reset} or under 1`);
      }
    } else if (servedBy(a) !== undefined && r.method !== 'HEAD' && header(a, 'ratelimit-limit').length === 0) {
      problems.push(`#${i} ${a.status} from the ${servedBy(a)} handler without quota headers: the limiter did not run`);
    } else if (header(a, 'ratelimit-remaining')[0] === '0' && !(Number(header(a, 'ratelimit-reset')[0]) >= 1)) {
      // Nothing left: the reset says when more is (the next unit, issue #46). 0 or missing would send a pacing client straight into a 429.
      problems.push(`#${i} ${a.status}: RateLimit-Remaining 0 with RateLimit-Reset ${JSON.stringify(header(a, 'ratelimit-reset'))}, not a wait of at least 1 s`);
    }
  });
  return problems;
}
