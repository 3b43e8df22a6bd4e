// createHttpLimiter: the framework-free request pipeline the adapters share (facts in; decision, status, headers and body out), and its routes.
import type { ServerResponse } from 'node:http';
import { limiterFrom } from '../engine/limiter';
import { callSite } from './bucket-claims';
import { handleNow } from './chain';
import { Family } from './family';
import { LoadShedder } from '../shedding/load-shedder';
import { FleetShedder } from '../shedding/fleet-shedder';
import { metricsFor } from '../observe/metrics';
import { pipelineOf, type PipelineParts } from './pipeline';
import { IDENTITY_NAMES, LIMITER_NAMES, resolveHttpOptions, type HttpRateLimitOptions, type ResolvedHttpOptions } from './resolve-http-options';
import type { HttpLimiter, HttpLimiterContext, HttpResult } from './types';
import { usageRouteOf } from './usage-route';
import { overridesOf } from './overrides';

export { UNMATCHED_SCOPE } from './scope';
export type { HttpLimiter, HttpLimiterContext, HttpResult } from './types';

/**
 * Hands `result.finish` the response's outcome (`countOnly`): its status once it has finished,
 * undefined when the connection closed before it did. Adapters call it with Node's response.
 */
export function finishOnResponse(res: ServerResponse, result: HttpResult): void {
  const finish = result.finish;
  if (!finish) return;
  // The client may have gone while the decision was made (a store round trip): 'close' has been
  // and will not come again, so the outcome is known now (an in-flight slot must not stay held).
  if (res.destroyed || res.socket?.destroyed) return finish(undefined);
  res.once('finish', () => finish(res.statusCode));
  res.once('close', () => {
    if (!res.writableFinished) finish(undefined);
  });
}

/** @deprecated Renamed `finishOnResponse` (`settle` names reserve-then-settle only). */
export const settleOnFinish = finishOnResponse;

/**
 * Builds the pipeline once from the global options. The default MemoryStore is made here, once, so
 * that routes and groups resolved later share it.
 */
export function createHttpLimiter<Req = unknown>(options: HttpRateLimitOptions<Req> = {}, context: HttpLimiterContext = {}): HttpLimiter<Req> {
  const resolved = resolveHttpOptions(options);
  // Only when no store was given; the store is set after parsing so that errors name what the app wrote.
  const global = options.store === undefined ? { ...options, store: resolved.limiter.store } : options;
  const label = context.label ?? `rateLimit() at ${callSite() ?? 'an unknown place'}`;
  const shedder = resolved.shedding && new LoadShedder(resolved.shedding);
  const fleet = resolved.fleet && new FleetShedder(resolved.fleet, resolved.limiter);
  for (const s of [shedder, fleet]) if (s) metricsFor(resolved.limiter.meterProvider).shedders.add(s);
  const family = new Family(shedder, fleet);
  return build(global, resolved, { limiter: family.join(limiterFrom(resolved.limiter)), identify: family.identify(resolved), family }, label);
}

/** One limiter (global, route or group) over its pipeline; its routes derive from the same global options. */
function build<Req>(global: HttpRateLimitOptions<Req>, o: ResolvedHttpOptions<Req>, parts: PipelineParts, label: string): HttpLimiter<Req> {
  const pipe = pipelineOf(o, parts, label);
  const { limiter, identify, family } = parts;

  function route(overrides: HttpRateLimitOptions<Req> | false | undefined, routeLabel?: string): HttpLimiter<Req> | null {
    if (overrides === false) return null;
    if (overrides === undefined) return api;
    const where = routeLabel ?? `route() at ${callSite() ?? 'an unknown place'}`;
    const resolved = resolveHttpOptions(global, overrides, routeLabel ? `${routeLabel} config.rateLimit` : 'rateLimit');
    // A route keeps the global limiter (and its block cache) unless it overrides a limiter option,
    // and the global identity (one key cache, one lookup per key) unless it overrides an identity option.
    const overridden = (names: ReadonlySet<string>) => Object.entries(overrides).some(([k, v]) => v !== undefined && names.has(k));
    return build(
      global,
      resolved,
      {
        limiter: overridden(LIMITER_NAMES) ? family.join(limiterFrom(resolved.limiter)) : limiter,
        identify: overridden(IDENTITY_NAMES) ? family.identify(resolved) : identify,
        family,
      },
      where,
    );
  }

  const api: HttpLimiter<Req> = {
    options: o,
    limiter,
    handle: async (facts, request) => handleNow(pipe, facts, request),
    handleNow: (facts, request) => handleNow(pipe, facts, request),
    route,
    scopeOf: pipe.scopeOf,
    claim: pipe.claim,
    usageRoute: (routes) => usageRouteOf(pipe, routes, 'usageRoute routes'),
    health: (options) => family.health(options),
    ...overridesOf(pipe),
  };
  return api;
}
