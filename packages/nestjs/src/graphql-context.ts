// FloodgateGuard's GraphQL branch: a resolver (@Query, @Mutation, or a field resolver Nest enhances) limited on its own bucket, the caller identified from the HTTP request in the GraphQL context.
import type { ExecutionContext } from '@nestjs/common';
import { isThenable, withoutStack, type HttpResult } from '@floodgate/core/http';
import type { FloodgateService } from './floodgate-service';
import { facts, setHeaders, type PlatformRequest, type PlatformResponse } from './platform';
import { RateLimitException } from './rate-limit-exception';

/** The resolver's `info`, as far as it is read here. */
interface InfoLike {
  readonly parentType?: { readonly name?: string };
  readonly fieldName?: string;
}

/** The GraphQL context value: `{ req, res }` (Apollo driver: return them from `context`), or Mercurius's `{ reply }` (the Fastify request on `reply.request`). */
interface GraphqlContextLike {
  readonly req?: PlatformRequest;
  readonly res?: PlatformResponse;
  readonly reply?: PlatformResponse & { readonly request?: PlatformRequest };
}

/** Resolver calls already decided: the guard both global and on the resolver decides one call once (the same `info` object). */
const decided = new WeakSet<object>();

/**
 * Decides one resolver call: its bucket is `ALL <Type>.<field>` ('ALL Query.items': one bucket
 * whatever the HTTP method, so switching GET and POST buys nothing) with the resolver's and its
 * class's `@RateLimit()` options over FloodgateModule's. A context without an HTTP request (a
 * subscription over a WebSocket) passes, as the guard's other non-HTTP contexts do.
 */
export function decideResolver(floodgate: FloodgateService, context: ExecutionContext): boolean | Promise<boolean> {
  const [, , value, info] = context.getArgs<[unknown, unknown, GraphqlContextLike | undefined, InfoLike | undefined]>();
  const req = value?.req ?? value?.reply?.request;
  if (!req || !info || typeof info !== 'object' || decided.has(info)) return true;
  const limiter = floodgate.limiterFor(context.getClass(), context.getHandler());
  if (!limiter) return true;
  decided.add(info);
  const route = `${info.parentType?.name ?? '?'}.${info.fieldName ?? '?'}`;
  const res = value?.res ?? value?.reply;
  const result = limiter.handleNow(facts(req, route, floodgate.fastifyTrust, true), req);
  return isThenable(result) ? result.then((r) => applied(r, req, res)) : applied(result, req, res);
}

/** Headers on the HTTP response when there is one; true to run the resolver, else the exception Nest's GraphQL layer turns into an error. */
function applied(result: HttpResult, req: PlatformRequest, res: PlatformResponse | undefined): true {
  req.rateLimit = result.decision;
  if (res) setHeaders(res, result.headers);
  if (result.status === 'next') return true;
  // The problem's fields as a plain object: a GraphQL error carries them, there is no body to stream.
  throw withoutStack(() => new RateLimitException(result, false, true));
}
