// Step: who the request is counted as: the `key` function's subject, else the built-in identity (API key, else IP).
import type { Identity } from '../identity';
import { isThenable } from '../base/maybe-promise';
import type { RequestContext } from './types';

/** A key function's answer that names a subject: a non-empty string or a finite number (else: fall back / skip). */
export function isKeyValue(raw: unknown): raw is string | number {
  return (typeof raw === 'string' && raw !== '') || (typeof raw === 'number' && Number.isFinite(raw));
}

/**
 * The request's identity; synchronous unless a `key` function or a `resolveKey` lookup makes it
 * wait. A key function that answers at once is used at once; only a thenable is waited for.
 */
export function identityOf<Req>(ctx: RequestContext<Req>): Identity | Promise<Identity> {
  const key = ctx.pipe.o.key;
  if (!key) return builtIn(ctx);
  const raw: unknown = key(ctx.request);
  return isThenable(raw) ? Promise.resolve(raw).then((value) => fromKey(ctx, value)) : fromKey(ctx, raw);
}

function fromKey<Req>(ctx: RequestContext<Req>, raw: unknown): Identity | Promise<Identity> {
  return isKeyValue(raw) ? { subject: `custom:${raw}`, kind: 'custom' } : builtIn(ctx);
}

/**
 * The built-in identity. Cheapest first: a caller the block cache denies is answered without a
 * resolveKey lookup; without resolveKey there is no lookup to skip, and no hook is built. A key
 * whose plan is blocked for longer than its answer is cached (a monthly quota used up) is looked up
 * again all the same, once per keyCache.ttlMs: its plan may have changed (an upgrade must take
 * effect then, not when the month ends); only a verified key has a plan, so nobody can invent one.
 */
function builtIn<Req>(ctx: RequestContext<Req>): Identity | Promise<Identity> {
  const { pipe } = ctx;
  if (!pipe.lookups) return pipe.identify(ctx.facts);
  const ttlMs = pipe.o.identity.ttlMs;
  return pipe.identify(ctx.facts, {
    isBlocked: (id) => pipe.limiterFor(id).isBlocked(id.subject, id.plan === undefined ? ctx : { cost: ctx.cost, scope: ctx.scope, withinMs: ttlMs }),
  });
}
