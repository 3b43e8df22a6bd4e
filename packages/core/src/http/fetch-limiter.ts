// rateLimitFetch: rate limiting for runtimes with no framework (Workers, Deno, Bun, Next.js middleware and route handlers): a Web Request in, a 429 Response or a pass-through with headers out.
import { invalidOption } from '../base/errors';
import { isThenable } from '../base/maybe-promise';
import type { Decision } from '../model/decision';
import { createHttpLimiter, type HttpResult } from './http-limiter';
import type { HttpRateLimitOptions } from './resolve-http-options';

export interface FetchRateLimitOptions extends HttpRateLimitOptions<Request> {
  /**
   * The client IP of a request, as the platform reports it: `(req) => req.headers.get('cf-connecting-ip')`
   * on Workers (set by Cloudflare, not by the client), `ipAddress(req)` from `@vercel/functions` on
   * Vercel, the `info.remoteAddr.hostname` Deno.serve passes, `server.requestIP(req)?.address` on Bun.
   * Read only what the platform itself sets. Default: none (every request in the one 'ip:unknown'
   * bucket, with the FG_IP_MISSING warning once: docs/identity.md).
   */
  ip?: (request: Request) => string | undefined;
  /**
   * The route pattern of a request ('/users/:id'), never the raw URL (a path parameter must not
   * mint buckets). Default: none, so each caller has one bucket for everything this limiter guards.
   */
  route?: (request: Request) => string | undefined;
}

/** One request's outcome: `response` (429, 503, 401, 400) to send as it is, or undefined: serve the request, with `headers` on the response. */
export interface FetchLimitResult {
  readonly response: Response | undefined;
  /** The RateLimit headers (and Retry-After) for the response you send. */
  readonly headers: Headers;
  readonly decision: Decision | undefined;
  /** Call with the response's status once it is sent (with `countOnly` or `concurrency`); undefined otherwise. */
  readonly finish: ((status: number | undefined) => void) | undefined;
}

/** The limiter: `limit(request)` decides one request; `wrap(handler)` guards a fetch handler with it. */
export interface FetchRateLimiter {
  limit(request: Request): Promise<FetchLimitResult>;
  wrap<Rest extends unknown[]>(handler: (request: Request, ...rest: Rest) => Response | Promise<Response>): (request: Request, ...rest: Rest) => Promise<Response>;
}

function resultOf(result: HttpResult): FetchLimitResult {
  const headers = new Headers();
  for (const [name, value] of result.headers) headers.set(name, value);
  if (result.status === 'next') return { response: undefined, headers, decision: result.decision, finish: result.finish };
  const body = result.body;
  if (body instanceof Response) {
    const response = new Response(body.body, { status: result.status, headers: body.headers });
    headers.forEach((value, name) => response.headers.set(name, value));
    return { response, headers, decision: result.decision, finish: undefined };
  }
  const text = body === undefined ? null : typeof body === 'string' ? body : JSON.stringify(body);
  const own = new Headers(headers);
  own.set('Content-Type', result.contentType ?? (typeof body === 'string' ? 'text/plain; charset=utf-8' : 'application/json'));
  return { response: new Response(text, { status: result.status, headers: own }), headers, decision: result.decision, finish: undefined };
}

/**
 * @example
 * // A Worker, a Deno or Bun server, a Next.js route handler:
 * const limiter = rateLimitFetch({ limit: 100, windowMs: '1m', ip: (req) => req.headers.get('cf-connecting-ip') ?? undefined });
 * export default { fetch: limiter.wrap((req) => new Response('ok')) };
 */
export function rateLimitFetch(options: FetchRateLimitOptions = {}): FetchRateLimiter {
  const { ip, route, ...core } = options;
  if (ip !== undefined && typeof ip !== 'function') invalidOption('ip', ip, "a function of the Request, such as (req) => req.headers.get('cf-connecting-ip') ?? undefined");
  if (route !== undefined && typeof route !== 'function') invalidOption('route', route, "a function of the Request returning its route pattern, such as '/users/:id'");
  const http = createHttpLimiter<Request>(core);
  const names = http.options.identity.headers;
  const limit = async (request: Request): Promise<FetchLimitResult> => {
    const headers: Record<string, string | undefined> = {};
    for (const name of names) headers[name] = request.headers.get(name) ?? undefined;
    const facts = { ip: ip?.(request) ?? undefined, headers, method: request.method, route: route?.(request) };
    const pending = http.handleNow(facts, request);
    return resultOf(isThenable(pending) ? await pending : pending);
  };
  const wrap: FetchRateLimiter['wrap'] = (handler) => async (request, ...rest) => {
    const outcome = await limit(request);
    if (outcome.response) return outcome.response;
    let response: Response;
    try {
      response = await handler(request, ...rest);
    } catch (error) {
      outcome.finish?.(undefined);
      throw error;
    }
    outcome.finish?.(response.status);
    // A Response may be immutable (one fetch() returned): ours on a copy then.
    try {
      outcome.headers.forEach((value, name) => response.headers.set(name, value));
      return response;
    } catch {
      const copy = new Response(response.body, response);
      outcome.headers.forEach((value, name) => copy.headers.set(name, value));
      return copy;
    }
  };
  return { limit, wrap };
}
