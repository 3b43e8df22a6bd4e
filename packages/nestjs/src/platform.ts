// What differs between Nest's Express and Fastify platforms: the request's facts, setting headers, the raw response, a direct write.
import type { ServerResponse } from 'node:http';
import { RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from './nest-metadata';
import { PROBLEM_CONTENT_TYPE, trustProxyOf, type HttpResult, type RequestFacts } from '@floodgate/core/http';

/** The platform request: Express `req` or Fastify `request`, read structurally. */
export interface PlatformRequest {
  ip?: string;
  method: string;
  headers: Record<string, string | string[] | undefined>;
  /** Express: the route the request matched, its path the full pattern Nest registered. */
  route?: { path?: unknown };
  /** Fastify: the matched route's options, `url` its pattern. */
  routeOptions?: { url?: string };
  rateLimit?: unknown;
  floodgate?: unknown;
  /** Express: the app, whose `trust proxy` setting made `ip`. Fastify requests have none. */
  app?: { settings?: Record<string, unknown> };
}

/** The Express app under Nest's Express platform: gateway handshakes read its `trust proxy` setting per message (it can change after init). */
export interface ExpressAppLike {
  get(name: 'trust proxy fn'): unknown;
  settings?: Record<string, unknown>;
}

/** The platform response: Express `res` (a ServerResponse) or Fastify `reply` (its ServerResponse on `raw`). */
export type PlatformResponse = ServerResponse | FastifyReplyLike;
interface FastifyReplyLike {
  raw: ServerResponse;
  header(name: string, value: string): unknown;
  getHeaders(): Record<string, unknown>;
  hijack(): unknown;
}

const isFastify = (res: PlatformResponse): res is FastifyReplyLike => (res as FastifyReplyLike).raw !== undefined && typeof (res as FastifyReplyLike).hijack === 'function';

/** Node's response under either platform. */
export const rawResponse = (res: PlatformResponse): ServerResponse => (isFastify(res) ? res.raw : res);

/**
 * The pattern the platform matched (never the URL): the full path Nest registered, global prefix
 * and version included. Without one (another adapter), the controller's and the handler's paths
 * from Nest's metadata.
 */
export function routePattern(req: PlatformRequest, controller: object, handler: object): string {
  const matched = req.route?.path ?? req.routeOptions?.url;
  if (typeof matched === 'string') return matched;
  const path = [Reflect.getMetadata(PATH_METADATA, controller), Reflect.getMetadata(PATH_METADATA, handler)]
    .map((part) => (Array.isArray(part) ? part[0] : part))
    .filter((part): part is string => typeof part === 'string' && part !== '' && part !== '/')
    .map((part) => part.replace(/^\/+|\/+$/g, ''));
  return `/${path.join('/')}`;
}

/** True for a handler Nest registered for every method (`@All()`): one bucket for all of them, on either platform. */
export function answersEveryMethod(handler: object): boolean {
  return Reflect.getMetadata(METHOD_METADATA, handler) === RequestMethod.ALL;
}

/** How the platform's trust-proxy setting made `ip` (for FG_TRUST_PROXY_ALL and FG_PROXY_HEADER_UNTRUSTED). */
export type TrustProxy = RequestFacts['trustProxy'];

/** Express's `trust proxy`, read from the request's app as @floodgate/express does: true trusts every hop; false (the default) and 0 none. */
function expressTrust(app: { settings?: Record<string, unknown> }): TrustProxy {
  const setting = app.settings?.['trust proxy'];
  return trustProxyOf(setting);
}

/**
 * Fastify's `trustProxy` (FastifyAdapter's options), fixed when the instance is made: read once, at
 * module init, from the option symbol @floodgate/fastify reads too. Undefined: not known, not checked.
 */
export function fastifyTrust(instance: object): TrustProxy {
  const key = Object.getOwnPropertySymbols(instance).find((s) => s.description === 'fastify.options');
  const options = key ? (instance as Record<symbol, { trustProxy?: unknown } | undefined>)[key] : undefined;
  if (!options) return undefined;
  const setting = options.trustProxy;
  return trustProxyOf(setting);
}

/** The request's facts; `fastify` is the Fastify platform's trust setting (Express's is read from the request's app, where it can change after init). */
export function facts(req: PlatformRequest, route: string | undefined, fastify: TrustProxy, allMethods = false, signal?: AbortSignal): RequestFacts {
  return { ip: req.ip, headers: req.headers, method: req.method, route, allMethods, trustProxy: req.app ? expressTrust(req.app) : fastify, signal };
}

/** Header names in lower case, each lowered once (Floodgate sends a handful of names, over and over). */
const lowered = new Map<string, string>();
function lowerCase(name: string): string {
  let lower = lowered.get(name);
  if (lower === undefined) {
    // The key V8 interns for a property of this name: Fastify's own toLowerCase of it returns it as
    // is, and it keys the reply's headers object without a string-table lookup per response.
    lower = Object.keys({ [name.toLowerCase()]: 0 })[0];
    if (lowered.size < 64) lowered.set(name, lower);
  }
  return lower;
}

/** Sets the result's headers: through Fastify's reply (its own lower-case names, given lowered), or on Node's response. */
export function setHeaders(res: PlatformResponse, headers: HttpResult['headers']): void {
  if (isFastify(res)) for (let i = 0; i < headers.length; i++) res.header(lowerCase(headers[i][0]), headers[i][1]);
  else for (let i = 0; i < headers.length; i++) res.setHeader(headers[i][0], headers[i][1]);
}

/**
 * On the Fastify platform, for Floodgate's default problem+json body: puts its Content-Type on the
 * reply and returns true, so the exception carries the problem as a plain object, which Nest's
 * Fastify adapter sends in one write with that type (it resets a type only for a body with a
 * `statusCode`). Elsewhere false: Nest's Express adapter resets the type of any object error body,
 * and gets a ProblemBody (a StreamableFile) instead.
 */
export function problemOnReply(res: PlatformResponse, result: HttpResult): boolean {
  if (!isFastify(res) || result.contentType !== PROBLEM_CONTENT_TYPE || typeof result.body !== 'string') return false;
  res.header('content-type', PROBLEM_CONTENT_TYPE);
  return true;
}

/**
 * `respondDirectly: true`: Floodgate's own problem+json straight to Node, skipping Nest's reply path
 * (headers set earlier on the response, e.g. by CORS, go out too; Fastify's reply is hijacked so
 * that Fastify sends nothing more).
 */
export function writeDirect(res: PlatformResponse, result: HttpResult): void {
  const raw = rawResponse(res);
  if (isFastify(res)) {
    const earlier = res.getHeaders();
    for (const name of Object.keys(earlier)) if (earlier[name] !== undefined) raw.setHeader(name, earlier[name] as string);
    res.hijack();
  }
  raw.writeHead(result.status as number, result.direct as string[]);
  raw.end(result.body as string);
}
