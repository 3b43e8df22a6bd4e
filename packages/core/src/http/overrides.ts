// Overrides through the HTTP layer: a target named as an operator knows it (an IP, an API key, a custom key; a route), turned into the subject and scope the pipeline counts.
import { FloodgateError, invalidOption } from '../base/errors';
import { digestKey } from '../identity/api-key';
import { ipSubject } from '../identity/ip';
import type { OverrideLimits, OverrideOptions, OverrideRecord } from '../engine/overrides';
import { ALL_SCOPES } from '../engine/broad-overrides';
import type { OverrideTarget, Pipeline } from './types';

export type { OverrideTarget } from './types';

/** The subject and scope of a target under this pipeline; FG_INVALID_OPTION when it names none or several. */
export function targetOf<Req>(pipe: Pipeline<Req>, target: OverrideTarget): { subject: string; scope: string; label: string } {
  if (!target || typeof target !== 'object') invalidOption('override target', target, '{ ip } or { apiKey } or { key }, with `route`');
  const given = (['ip', 'apiKey', 'key'] as const).filter((k) => target[k] !== undefined);
  if (given.length !== 1) invalidOption('override target', target, 'exactly one of ip, apiKey, key');
  let subject: string;
  let label: string;
  if (target.ip !== undefined) {
    const found = ipSubject(target.ip, pipe.o.identity.ipv6Subnet);
    if (!found.ok) invalidOption('override target.ip', target.ip, 'an IPv4 or IPv6 address');
    subject = found.subject;
    label = subject;
  } else if (target.apiKey !== undefined) {
    if (typeof target.apiKey !== 'string' || target.apiKey === '') invalidOption('override target.apiKey', target.apiKey, 'a non-empty string');
    subject = `key:${digestKey(target.apiKey)}`;
    label = `key:${subject.slice(4, 12)}...`;
  } else {
    if (typeof target.key !== 'string' || target.key === '') invalidOption('override target.key', target.key, 'a non-empty string');
    // As request-identity.ts names a key function's answer.
    subject = `custom:${target.key}`;
    label = `key ${target.key.length > 64 ? `${target.key.slice(0, 64)}...` : target.key}`;
  }
  const scope = pipe.o.group ?? target.route;
  if (scope === undefined) invalidOption('override target.route', target.route, "the route as the framework matches it, e.g. 'GET /v1/chat' (or a limiter with a group)");
  if (typeof scope !== 'string') invalidOption('override target.route', scope, 'a string');
  return { subject, scope, label };
}

/** A broad target's scope (a route's, or ALL_SCOPES for `all`), or undefined for a caller's target. */
function broadScope<Req>(pipe: Pipeline<Req>, target: OverrideTarget): string | undefined {
  if (!target || typeof target !== 'object' || target.ip !== undefined || target.apiKey !== undefined || target.key !== undefined) return undefined;
  if (target.all === true) {
    if (target.route !== undefined) invalidOption('override target', target, '`all: true` without `route` (or `route` alone)');
    return ALL_SCOPES;
  }
  const scope = pipe.o.group ?? target.route;
  if (typeof scope !== 'string' || scope === '') invalidOption('override target', target, "{ ip | apiKey | key, route }, { route } (every caller of a route) or { all: true }");
  return scope;
}

/** The override functions of one HTTP limiter. */
export function overridesOf<Req>(pipe: Pipeline<Req>) {
  return {
    override(target: OverrideTarget, limits: OverrideLimits, options: Omit<OverrideOptions, 'scope'>): Promise<OverrideRecord> {
      try {
        const wide = broadScope(pipe, target);
        if (wide !== undefined) return pipe.limiter.overrideAll(limits, { ...options, scope: wide === ALL_SCOPES ? undefined : wide });
        const { subject, scope, label } = targetOf(pipe, target);
        return pipe.limiter.override(subject, limits, { label, ...options, scope });
      } catch (error) {
        return Promise.reject(error);
      }
    },
    clearOverride(target: OverrideTarget): Promise<void> {
      try {
        const wide = broadScope(pipe, target);
        if (wide !== undefined) return pipe.limiter.clearOverrideAll({ scope: wide === ALL_SCOPES ? undefined : wide });
        const { subject, scope, label } = targetOf(pipe, target);
        return pipe.limiter.clearOverride(subject, { scope, label });
      } catch (error) {
        return Promise.reject(error);
      }
    },
    overrides: (): Promise<OverrideRecord[]> => pipe.limiter.overrides(),
  };
}

/** What an adapter's middleware offers an admin route (the same three functions in every adapter). */
export interface OverrideFace {
  /** HttpLimiter.override: one caller's limits on one route, on every instance at its next decision, for `ttlMs`. */
  override(target: OverrideTarget, limits: OverrideLimits, options: Omit<OverrideOptions, 'scope'>): Promise<OverrideRecord>;
  /** HttpLimiter.clearOverride. */
  clearOverride(target: OverrideTarget): Promise<void>;
  /** HttpLimiter.overrides: the overrides on this store and prefix that have not expired. */
  listOverrides(): Promise<OverrideRecord[]>;
}

/** The override functions an adapter puts on its middleware; for an exempt route (no limiter) each rejects with FG_OVERRIDES_OFF. */
export function overrideFace(http: { override: OverrideFace['override']; clearOverride: OverrideFace['clearOverride']; overrides(): Promise<OverrideRecord[]> } | null): OverrideFace {
  if (!http) {
    const off = () => Promise.reject(new FloodgateError('FG_OVERRIDES_OFF', 'This middleware limits nothing (route(false)): it has no overrides.', 'overrides'));
    return { override: off, clearOverride: off, listOverrides: off };
  }
  return { override: (t, l, o) => http.override(t, l, o), clearOverride: (t) => http.clearOverride(t), listOverrides: () => http.overrides() };
}
