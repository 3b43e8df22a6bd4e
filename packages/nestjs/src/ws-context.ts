// FloodgateGuard's WebSocket branch: a gateway's @SubscribeMessage handler limited on its own bucket, the caller identified from the client's handshake as an HTTP request would be.
import type { ExecutionContext } from '@nestjs/common';
import type { IncomingHttpHeaders } from 'node:http';
import { isThenable, withoutStack, type HttpResult } from '@floodgate/core/http';
import type { FloodgateService } from './floodgate-service';
import { MESSAGE_METADATA } from './nest-metadata';
import { facts, type ExpressAppLike, type PlatformRequest } from './platform';

/** A gateway's client, read structurally: a Socket.IO socket (`handshake`, `request`) or a ws WebSocket (its upgrade request where the app kept it). */
interface WsClientLike {
  readonly handshake?: { readonly address?: string; readonly headers?: IncomingHttpHeaders };
  readonly request?: { readonly headers?: IncomingHttpHeaders; readonly socket?: { readonly remoteAddress?: string } };
  readonly upgradeReq?: WsClientLike['request'];
  readonly _socket?: { readonly remoteAddress?: string };
}

/** The Express app's compiled `trust proxy` function (proxy-addr's: address and hop index). */
type TrustFn = (address: string, hop: number) => boolean;

/** Messages already decided: the guard on the gateway and on its handler decides one message once (Nest gives both the same args array). */
const decided = new WeakSet<object>();

/** The platform's error for a refused message: @nestjs/websockets' WsException, loaded once, at the first refusal (the app has it: an optional peer, never loaded by an app without gateways). */
let wsException: Promise<new (error: object) => Error> | undefined;
function loadWsException(): Promise<new (error: object) => Error> {
  const name = '@nestjs/websockets';
  wsException ??= (import(name) as Promise<{ WsException?: new (error: object) => Error; default?: { WsException?: new (error: object) => Error } }>).then(
    (mod) => (mod.WsException ?? mod.default?.WsException)!,
  );
  return wsException;
}

/**
 * The handshake as an HTTP request: its headers, and the client IP by the Express app's trust-proxy
 * rule (`app` set: its `req.app`, so the core's proxy warnings read the same setting). Without an
 * Express app (the Fastify platform, or none) the peer's address: proxy headers are not read.
 */
export function handshakeRequest(client: WsClientLike, app: ExpressAppLike | undefined): PlatformRequest {
  const request = client.request ?? client.upgradeReq;
  const headers = client.handshake?.headers ?? request?.headers ?? {};
  const peer = client.handshake?.address ?? request?.socket?.remoteAddress ?? client._socket?.remoteAddress;
  const trust = app?.get('trust proxy fn');
  const ip = peer === undefined || typeof trust !== 'function' ? peer : proxiedIp(peer, headers, trust as TrustFn);
  return app ? { ip, method: 'GET', headers, app } : { ip, method: 'GET', headers };
}

/** proxy-addr's rule, as Express applies it to `req.ip`: from the peer back through X-Forwarded-For, the first hop the app does not trust (else the farthest). */
function proxiedIp(peer: string, headers: IncomingHttpHeaders, trust: TrustFn): string {
  const raw = headers['x-forwarded-for'];
  const forwarded = (Array.isArray(raw) ? raw.join(',') : (raw ?? '')).split(',').map((hop) => hop.trim()).filter((hop) => hop !== '').reverse();
  const hops = [peer, ...forwarded];
  for (let i = 0; i < hops.length - 1; i++) if (!trust(hops[i], i)) return hops[i];
  return hops[hops.length - 1];
}

/**
 * Decides one gateway message: its bucket is `ALL WS <Gateway>.<event>` with the handler's and its
 * gateway's `@RateLimit()` options over FloodgateModule's; the caller is identified from the
 * handshake (headers, so API keys apply; the address under the HTTP app's trust-proxy setting).
 * Refused: a WsException whose error `{ status: 'error', statusCode, message, retryAfterMs }` Nest's
 * BaseWsExceptionFilter emits to the client as its 'exception' event; the handler does not run.
 */
export function decideMessage(floodgate: FloodgateService, context: ExecutionContext): boolean | Promise<boolean> {
  const args = context.getArgs<unknown[]>();
  if (decided.has(args)) return true;
  const limiter = floodgate.limiterFor(context.getClass(), context.getHandler());
  if (!limiter) return true;
  decided.add(args);
  const client = context.switchToWs().getClient<WsClientLike>();
  const req = handshakeRequest(client ?? {}, floodgate.expressApp);
  const event = Reflect.getMetadata(MESSAGE_METADATA, context.getHandler()) as unknown;
  const route = `WS ${context.getClass().name}.${typeof event === 'string' ? event : context.getHandler().name}`;
  // allMethods: one bucket per handler ('ALL WS <Gateway>.<event>'), there is no method to vary.
  const result = limiter.handleNow(facts(req, route, 'none', true), req);
  return isThenable(result) ? result.then(answered) : answered(result);
}

/** True to run the handler; else a WsException carrying the retry time. */
function answered(result: HttpResult): boolean | Promise<boolean> {
  if (result.status === 'next') return true;
  const retryAfterMs = Math.max(0, result.decision?.retryAfterMs ?? 0);
  const status = result.status as number;
  const message = status === 401 ? 'Unauthorized' : status === 503 ? 'Service Unavailable' : 'Too Many Requests';
  const error = { status: 'error', statusCode: status, message, retryAfterMs, reason: result.decision?.reason ?? 'unknown-key' };
  return loadWsException().then((WsException) => {
    throw withoutStack(() => new WsException(error));
  });
}
