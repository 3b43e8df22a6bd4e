// A usage route's answer (GET /usage): the caller's own use of a limiter's routes, keyed on the identity the limiter itself resolves; and each request's settle (reserve, then settle).
import { invalidOption } from '../base/errors';
import type { Identity } from '../identity';
import { isThenable } from '../base/maybe-promise';
import { newSettleToken, type Reservation, type SettleResult } from '../model/settle';
import type { Usage } from '../model/usage';
import { PROBLEM_CONTENT_TYPE } from '../headers/problem-details';
import type { Decision } from '../model/decision';
import { isKeyValue } from './request-identity';
import type { Identified, Pipeline, UsageAnswer, UsageRoute } from './types';
import type { RequestFacts } from '../identity';

const ROUTE = /^([A-Za-z]+) (\/\S*)$/;

/**
 * The routes a usage route reports, checked once: 'METHOD /pattern' strings (the route patterns the
 * framework matches, e.g. 'POST /v1/chat'); with a `group`, its one bucket (routes may be left out).
 */
export function usageRoutes(option: string, routes: unknown, group: string | undefined): { name: string; scope: (pipe: Pipeline<unknown>) => string }[] {
  if (routes === undefined && group !== undefined) return [{ name: group, scope: () => group }];
  if (!Array.isArray(routes) || routes.length < 1 || routes.length > 64) {
    invalidOption(option, routes, "an array of 1 to 64 routes such as ['POST /v1/chat'] (or a limiter with a `group`)");
  }
  return routes.map((r: unknown, i) => {
    const m = typeof r === 'string' ? ROUTE.exec(r) : null;
    if (!m) invalidOption(`${option}[${i}]`, r, "'METHOD /pattern', the route as the framework matches it, e.g. 'POST /v1/chat'");
    const [, method, route] = m;
    return { name: r as string, scope: (pipe: Pipeline<unknown>) => pipe.scopeOf({ method, route }) };
  });
}

/**
 * The caller's identity exactly as the limiter resolves it: the `key` function's subject, else a
 * verified API key (resolveKey), else the client IP. An API key that does not verify is never a
 * subject of its own (under `unverifiedKeys: 'ip'`, the default), so no key a client makes up or
 * copies shows another caller's usage: only the usage of whatever the limiter would charge it.
 */
function identityFor<Req>(pipe: Pipeline<Req>, facts: RequestFacts, request: Req): Identity | Promise<Identity> {
  const key = pipe.o.key;
  const builtIn = () => pipe.identify(facts);
  if (!key) return builtIn();
  const raw: unknown = key(request);
  const pick = (value: unknown) => (isKeyValue(value) ? ({ subject: `custom:${value}`, kind: 'custom' } as Identity) : builtIn());
  return isThenable(raw) ? Promise.resolve(raw).then(pick) : pick(raw);
}

const json = 'application/json; charset=utf-8';

const UNAUTHORIZED: UsageAnswer = {
  status: 401,
  contentType: PROBLEM_CONTENT_TYPE,
  body: JSON.stringify({ type: 'about:blank', title: 'Unauthorized', status: 401, detail: 'Unknown API key.' }),
};

/**
 * Builds a usage route over a pipeline; `routes` checked now (FG_INVALID_OPTION), never per request.
 * Each route is read under the pipeline that counts it (a route limiter's own limits, identity and
 * plans), once that pipeline has claimed it (at registration for Fastify and groups, else at the
 * route's first request); until then under this one (nothing is counted there yet).
 */
export function usageRouteOf<Req>(pipe: Pipeline<Req>, routes: unknown, option = 'usage routes'): UsageRoute {
  const wanted = usageRoutes(option, routes, pipe.o.group);
  const scopes = wanted.map((w) => ({ name: w.name, scope: w.scope(pipe as Pipeline<unknown>) }));
  return async (facts, request) => {
    const counters = scopes.map((s) => (pipe.family.counterOf(s.scope) as Pipeline<unknown> | undefined) ?? (pipe as Pipeline<unknown>));
    // One identity per pipeline (routes may resolve identity differently), resolved once per request.
    const identities = new Map<Pipeline<unknown>, Identity | Promise<Identity>>();
    for (const c of counters) if (!identities.has(c)) identities.set(c, identityFor(c, facts, request));
    const resolved = await Promise.all(counters.map((c) => identities.get(c)!));
    if (resolved.some((id) => id.rejected)) return UNAUTHORIZED;
    let read: Usage[];
    try {
      read = await Promise.all(scopes.map((s, i) => counters[i].limiterFor(resolved[i]).usage(resolved[i].subject, { scope: s.scope })));
    } catch {
      // No usage to make up: say the store could not tell.
      return { status: 503, contentType: PROBLEM_CONTENT_TYPE, body: JSON.stringify({ type: 'about:blank', title: 'Service Unavailable', status: 503, detail: 'Usage is unavailable for now.' }) };
    }
    const usage = {
      routes: read.map((u, i) => ({ route: scopes[i].name, policies: u.policies.map((p) => ({ ...p, resetsAt: new Date(p.resetsAt).toISOString() })) })),
    };
    return { status: 200, contentType: json, body: JSON.stringify(usage), usage };
  };
}

/**
 * An admitted request's reservation (option `settle` set): the handler settles the actual cost with
 * it. Undefined when there is nothing the shared store charged (denied, degraded, exempt).
 */
export function reservationOf<Req>(ctx: Identified<Req>, decision: Decision): Reservation | undefined {
  const at = decision.at;
  if (at === undefined || !decision.allowed) return undefined;
  const limiter = ctx.pipe.limiterFor(ctx.identity);
  const subject = ctx.identity.subject;
  const { scope, cost } = ctx;
  const token = newSettleToken();
  return { decision, settle: (actual: number): Promise<SettleResult> => limiter.settle(subject, { scope, at, reserved: cost, actual, token }) };
}
