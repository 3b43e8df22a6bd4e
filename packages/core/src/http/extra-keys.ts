// Several keys per request: more subjects a request is counted against (an account name beside the IP), each with its own limits.
import { invalidOption } from '../base/errors';
import { LIMIT_OPTION_NAMES, maxCostOf, resolveLimit, resolveLimits, type LimitOptions, type ResolvedLimiterOptions } from '../engine/options';
import { checkOptionNames, optionNames } from '../base/validate';

/** One more subject to count a request against. */
export interface ExtraKeyOptions<Req = unknown> extends Omit<LimitOptions, 'name'> {
  /** Names this key in its scope, headers and `resetOnSuccess`: `[A-Za-z0-9_.-]{1,64}`, unique per limiter. */
  name: string;
  /**
   * The subject from the request, e.g. `(req) => req.body?.username` (hashed before any store; it
   * never appears in a key). A string of up to 1024 characters or a finite number is the subject
   * (42 and '42' are one); undefined or '' skips this key for the request (no account named);
   * anything else (an array, an object, null, a boolean, a longer string: what a client can make
   * of a JSON body field) is answered 400, counted against the keys before it, never skipped.
   * Where it reads the body, the limiter must run after the body parser (a route middleware after
   * it; Fastify's `hook: 'preHandler'`).
   */
  key: (request: Req) => unknown;
  /**
   * Several limits for this key (as createLimiter's `limits`); else `limit`/`windowMs`/... (its
   * policy is then named after the key); with neither, the route's limits (its own counts).
   */
  limits?: LimitOptions[];
}

/** An extra key, parsed: its limiter's options are the route's with this key's limits. */
export interface ResolvedExtraKey<Req = unknown> {
  readonly name: string;
  readonly key: ExtraKeyOptions<Req>['key'];
  readonly limiter: ResolvedLimiterOptions;
}

const EXTRA_KEY_OPTION_NAMES = optionNames<ExtraKeyOptions>()([
  'name',
  'key',
  'limits',
  ...(LIMIT_OPTION_NAMES.filter((n) => n !== 'name') as Exclude<keyof LimitOptions, 'name'>[]),
]);
const NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** Parses `extraKeys` once, at construction: each entry's names, key function and limits. */
export function resolveExtraKeys<Req>(raw: unknown, route: ResolvedLimiterOptions): ResolvedExtraKey<Req>[] {
  if (raw === undefined) return [];
  if (!Array.isArray(raw) || raw.length > 8) invalidOption('extraKeys', raw, 'an array of up to 8 { name, key, limit, windowMs, ... } objects');
  const seen = new Set<string>();
  return raw.map((entry: ExtraKeyOptions<Req>, i) => {
    const option = `extraKeys[${i}]`;
    if (!entry || typeof entry !== 'object' || Array.isArray(entry)) invalidOption(option, entry, 'an object { name, key, limit, windowMs, ... }');
    checkOptionNames(option, entry, EXTRA_KEY_OPTION_NAMES);
    if (typeof entry.name !== 'string' || !NAME.test(entry.name)) invalidOption(`${option}.name`, entry.name, 'a string matching [A-Za-z0-9_.-]{1,64}');
    if (seen.has(entry.name)) invalidOption(`${option}.name`, entry.name, 'a name no other extra key has');
    seen.add(entry.name);
    if (typeof entry.key !== 'function') invalidOption(`${option}.key`, entry.key, 'a function of the request returning the subject');
    const { name, key, limits, ...single } = entry;
    if (limits !== undefined && Object.keys(single).some((k) => k === 'limit' || k === 'burst')) {
      invalidOption(`${option}.limit`, single.limit ?? single.burst, 'no `limit` or `burst` beside `limits` (set them per limit)');
    }
    // Without limits of its own, the key is limited like the route (same definitions, its own counts).
    const own = limits !== undefined || Object.values(single).some((v) => v !== undefined);
    const resolved = limits !== undefined ? resolveLimits(limits, `${option}.limits`) : own ? [resolveLimit({ name, ...single }, {}, option, name)] : [...route.limits];
    return { name, key, limiter: { ...route, limits: resolved, maxCost: maxCostOf(resolved) } };
  });
}
