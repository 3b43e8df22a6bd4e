// The generated attack suite's arbitraries: request sequences that vary everything a client controls, and the real caller the test's proxy knows for each.
import fc from 'fast-check';

/** What the app's routes are, as the generator targets them: 'unmatched' is a path no route serves. */
export type Target = 'all' | 'items' | 'login' | 'cost' | 'rawcost' | 'unmatched';

/**
 * Dimensions of a known open weakness the generator leaves out until its fix is merged: none today
 * (issue 40's rows 2, methods on an all-method route, and 8, non-string extra keys, were left out
 * here until their fixes landed). A new entry is `name: leaveOut('name')`, listed in the closing
 * note of the change that adds it; FG_ATTACK_ALL=1 puts them all back in (to check a fix),
 * FG_ATTACK_ALL=name (a comma-separated list) only those named.
 */
const putBack = (process.env.FG_ATTACK_ALL ?? '').split(',');
export const leaveOut = (name: string) => !putBack.includes('1') && !putBack.includes(name);
export const KNOWN_OPEN: Readonly<Record<'methodOnAllRoutes' | 'nonStringExtraKeys', boolean>> = {
  /** Row 2 (fixed): a method other than GET/HEAD on an all-method route bought a fresh budget. */
  methodOnAllRoutes: false,
  /** Row 8 (fixed): a non-string `username` (array, object, number, boolean) skipped the per-account key. */
  nonStringExtraKeys: false,
};

/** One generated request. Callers and keys are indices into the run's own pools (fresh per run), so runs never share state. */
export interface AttackRequest {
  readonly target: Target;
  /** The real caller: an index into the run's callers (modulo their number). */
  readonly caller: number;
  /** How the trusted proxy spells the caller's address: IPv4 as is or v4-mapped; IPv6 with this interface id, full or compressed, upper or lower case. */
  readonly spelling: { readonly mapped: boolean; readonly iid: number; readonly full: boolean; readonly upper: boolean };
  readonly method: string;
  /** The request-target: path and query as sent. */
  readonly path: string;
  /** Attacker-written X-Forwarded-For entries before the proxy's own, as one line with it or as separate lines; Forwarded and X-Real-IP lines. */
  readonly forwarded: { readonly junk: readonly string[]; readonly ownLine: boolean; readonly name: string; readonly forwardedHeader: string | null; readonly realIp: string | null };
  /** API key headers as sent, in order: [name, value]; `issued` marks the pool keys (index) each carries. */
  readonly keys: readonly (readonly [string, string])[];
  /** The JSON body's `username` (undefined: left out) and how the body is sent. */
  readonly body: { readonly username: unknown; readonly contentType: string | null; readonly malformed: boolean } | null;
  /** The `x-cost` header value as sent (the /cost and /rawcost routes read it), or null. */
  readonly cost: string | null;
  /** Send this request together with the one before it (concurrently). */
  readonly withPrevious: boolean;
}

export interface AttackRun {
  /** IPv4 or IPv6 for each real caller (1 to 3). */
  readonly callers: readonly ('v4' | 'v6')[];
  readonly requests: readonly AttackRequest[];
  /** Which of the app's mountings this run goes through (an index into the harness's list). */
  readonly mounting: number;
}

/** How many issued (verified) keys and victim accounts each run's pools hold. */
export const ISSUED_KEYS = 2;
export const ACCOUNTS = 2;

/** Long values, as short placeholders so that a counterexample prints small (the sender writes them out). */
export const LONG_300 = '\u0000long300';
export const LONG_5000 = '\u0000long5000';

/** Placeholders the sender fills in from the run's pools: an issued key or a victim account by index. */
export const issuedRef = (i: number) => `\u0000issued${i}`;
export const accountRef = (i: number) => `\u0000account${i}`;

const LLHTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'PROPFIND', 'PURGE', 'M-SEARCH', 'LOCK', 'MKCOL', 'REPORT', 'QUERY', 'SEARCH', 'LINK', 'NOTIFY'];
const token = fc.stringMatching(/^[A-Z][A-Z-]{0,7}$/);
// Node's HTTP server (llhttp) answers 400 to a token it does not know before any app sees it: invented ones stay rare.
// (Node's client upper-cases a method, and llhttp refuses lower case: no lower-case spelling is sent.)
const anyMethod = fc.oneof({ arbitrary: fc.constantFrom(...LLHTTP_METHODS), weight: 6 }, { arbitrary: token, weight: 1 });

function methodFor(target: Target, favourites: Favourites): fc.Arbitrary<string> {
  // On the all-method route, GET and HEAD first, so that a caller has used its GET budget when another method comes,
  // and the run's favourite method again and again.
  if (target === 'all') {
    if (KNOWN_OPEN.methodOnAllRoutes) return fc.constantFrom('GET', 'HEAD');
    return fc.oneof({ arbitrary: fc.constantFrom('GET', 'HEAD'), weight: 2 }, { arbitrary: fc.constant(favourites.method), weight: 2 }, { arbitrary: anyMethod, weight: 1 });
  }
  const usual = target === 'items' ? fc.constantFrom('GET', 'HEAD') : target === 'unmatched' ? anyMethod : fc.constant('POST');
  return fc.oneof({ arbitrary: usual, weight: 4 }, { arbitrary: anyMethod, weight: 1 });
}

/** True about one time in twelve. */
const sometimes = fc.nat(11).map((n) => n === 0);
const segment = fc.stringMatching(/^[A-Za-z0-9._~-]{1,12}$/);
const encodedByte = fc.integer({ min: 0, max: 255 }).chain((b) => fc.constantFrom(`%${b.toString(16).padStart(2, '0')}`, `%${b.toString(16).padStart(2, '0').toUpperCase()}`));
const paramValue = fc.oneof(segment, fc.array(fc.oneof(segment, encodedByte), { minLength: 1, maxLength: 6 }).map((p) => p.join('')), fc.constantFrom('..', '.', '%2e%2e', '%2F', 'a%2Fb', '%00'), fc.constant(LONG_300));
const query = fc.oneof(
  fc.constant(''),
  fc.constant('?'),
  fc.array(fc.tuple(segment, fc.oneof(segment, encodedByte)), { minLength: 1, maxLength: 4 }).map((pairs) => `?${pairs.map(([k, v]) => `${k}=${v}`).join('&')}`),
);

/** Spells a route's path the ways a client can: case, trailing and duplicate slashes, a percent-encoded letter, a dot segment, a query. */
function pathFor(target: Target): fc.Arbitrary<string> {
  const base: fc.Arbitrary<string[]> =
    target === 'items' ? paramValue.map((id) => ['items', id]) : target === 'unmatched' ? fc.array(segment, { minLength: 1, maxLength: 3 }).map((s) => ['zz', ...s]) : fc.constant([target]);
  // Each spelling now and then: most requests still reach their route, so its limit is exercised.
  const spelling = fc.record({
    letterCase: fc.constantFrom('as-is', 'as-is', 'as-is', 'as-is', 'as-is', 'as-is', 'as-is', 'as-is', 'upper', 'capital'),
    trailing: sometimes,
    leadingDouble: sometimes,
    innerDouble: sometimes,
    encodeFirst: sometimes,
    dot: sometimes,
  });
  return fc.tuple(base, spelling, query).map(([segments, s, q]) => {
    const first = segments[0];
    let head = s.letterCase === 'upper' ? first.toUpperCase() : s.letterCase === 'capital' ? first[0].toUpperCase() + first.slice(1) : first;
    if (s.encodeFirst) head = `%${head.charCodeAt(0).toString(16)}${head.slice(1)}`;
    const rest = segments.slice(1);
    const body = [head, ...rest].join(s.innerDouble && rest.length > 0 ? '//' : '/');
    return `${s.leadingDouble ? '//' : '/'}${s.dot ? './' : ''}${body}${s.trailing ? '/' : ''}${q}`;
  });
}

const ipv4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((p) => p.join('.'));
const junkHop = fc.oneof(ipv4, fc.constantFrom('unknown', '', '::1', '127.0.0.1', '2001:db8::1', '[2001:db8::2]:80', '1.2.3.4:5678', 'not-an-ip', '0.0.0.0'));
const caseOf = (name: string) => fc.constantFrom(name, name.toUpperCase(), name.replace(/(^|-)([a-z])/g, (_m, d: string, c: string) => d + c.toUpperCase()));

const forwardedArb = fc.record({
  junk: fc.array(junkHop, { maxLength: 3 }),
  ownLine: fc.boolean(),
  name: caseOf('x-forwarded-for'),
  forwardedHeader: fc.option(fc.oneof(ipv4.map((ip) => `for=${ip}`), fc.constantFrom('for="[2001:db8::7]"', 'for=unknown', 'for=1.1.1.1;proto=https, for=2.2.2.2', 'garbage')), { nil: null }),
  realIp: fc.option(ipv4, { nil: null }),
});

const keyValue = fc.oneof(fc.integer({ min: 0, max: ISSUED_KEYS - 1 }).map(issuedRef), fc.stringMatching(/^[A-Za-z0-9._~+/-]{1,40}$/), fc.constantFrom('', ' ', LONG_5000));
const keyHeader = fc.oneof(
  fc.tuple(caseOf('authorization'), fc.constantFrom('Bearer ', 'bearer ', 'BEARER ', 'Bearer  ', 'Basic '), keyValue).map(([n, scheme, v]) => [n, scheme + v] as const),
  fc.tuple(caseOf('x-api-key'), keyValue).map(([n, v]) => [n, v] as const),
);


// Few values, most often the first victim, so that one repeats past the account limit within a run.
const victim = fc.oneof({ arbitrary: fc.constant(accountRef(0)), weight: 3 }, { arbitrary: fc.constant(accountRef(1)), weight: 1 });
const account = fc.oneof({ arbitrary: victim, weight: 3 }, { arbitrary: segment, weight: 1 });
const nonString = fc.oneof({ arbitrary: victim.map((a) => [a]), weight: 3 }, victim.map((a) => ({ $ne: a })), fc.constantFrom(7, true, null, []));
const username: fc.Arbitrary<unknown> = KNOWN_OPEN.nonStringExtraKeys
  ? fc.oneof({ arbitrary: account, weight: 5 }, { arbitrary: fc.constantFrom(undefined, ''), weight: 1 })
  : fc.oneof({ arbitrary: account, weight: 4 }, { arbitrary: nonString, weight: 3 }, { arbitrary: fc.constantFrom(undefined, ''), weight: 1 });
/** A request body: usually JSON with a username, sometimes malformed JSON (parsers answer 400 before any limiter). */
/** A request body: usually JSON with a username (half the time the run's favourite), sometimes malformed JSON (parsers answer 400 before any limiter). */
const bodyOf = (favourites: Favourites) =>
  fc.record({
    username: fc.oneof({ arbitrary: fc.constant(favourites.username), weight: 1 }, { arbitrary: username, weight: 1 }),
    contentType: fc.constantFrom('application/json', 'Application/JSON; charset=utf-8', 'application/json', null),
    malformed: fc.nat(9).map((n) => n === 0),
  });

/** A run's favourites: one method and one username it sends again and again, so that one of them passes a limit if it can. */
interface Favourites {
  readonly method: string;
  readonly username: unknown;
}

const costHeader = fc.oneof(
  { arbitrary: fc.integer({ min: 0, max: 6 }).map(String), weight: 3 },
  fc.constantFrom('abc', '-1', '2.5', '1e3', ' 3', '3, 5', '', '0x5', '1e309', 'Infinity', '00004', '9007199254740993'),
);

function requestFor(target: Target, favourites: Favourites): fc.Arbitrary<AttackRequest> {
  const posting = target === 'login' || target === 'cost' || target === 'rawcost';
  return fc.record({
    target: fc.constant(target),
    caller: fc.nat(2),
    spelling: fc.record({ mapped: fc.boolean(), iid: fc.nat(0xffff), full: fc.boolean(), upper: fc.boolean() }),
    method: methodFor(target, favourites),
    path: pathFor(target),
    forwarded: forwardedArb,
    keys: fc.array(keyHeader, { maxLength: 3 }),
    body: posting ? fc.option(bodyOf(favourites), { freq: 5, nil: null }) : fc.option(bodyOf(favourites), { freq: 1, nil: null }),
    cost: target === 'cost' || target === 'rawcost' ? fc.option(costHeader, { freq: 4, nil: null }) : fc.constant(null),
    // Often together: bursts of concurrent requests from one caller race in the limiter and the store.
    withPrevious: fc.nat(9).map((n) => n < 6),
  });
}

/** Mostly the routes, so that their limits are reached within a run; now and then a path no route serves. */
const target = fc.oneof(
  { arbitrary: fc.constantFrom<Target>('all', 'items', 'login', 'cost', 'rawcost'), weight: 6 },
  { arbitrary: fc.constant<Target>('unmatched'), weight: 1 },
);

/**
 * One run: 1 to 3 real callers and up to `maxRequests` requests among them, through one of
 * `mountings` mountings. Most requests go to the run's focus route, so that its callers pass its
 * limit in many ways within one run; the rest anywhere.
 */
export function attackRun(mountings: number, maxRequests = 24): fc.Arbitrary<AttackRun> {
  const favouritesArb = fc.record({ method: anyMethod, username });
  return fc.tuple(target, favouritesArb).chain(([focus, favourites]) =>
    fc.record({
      callers: fc.array(fc.constantFrom<'v4' | 'v6'>('v4', 'v6'), { minLength: 1, maxLength: 3, size: 'max' }),
      // size 'max': lengths spread up to maxRequests, so that a run often passes its callers' limits.
      requests: fc.array(fc.oneof({ arbitrary: requestFor(focus, favourites), weight: 3 }, { arbitrary: target.chain((t) => requestFor(t, favourites)), weight: 2 }), {
        minLength: 1,
        maxLength: maxRequests,
        size: 'max',
      }),
      mounting: fc.nat(mountings - 1),
    }),
  );
}
