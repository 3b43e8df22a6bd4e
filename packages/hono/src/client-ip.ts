// The client IP for Hono, which has no trust-proxy setting: the runtime's connection info, and X-Forwarded-For only through proxies the app names.
import { createAllowList, forwardedClient, invalidOption, trustProxyOf } from '@floodgate/core/http';
import type { Context } from 'hono';
import type { ConnInfo } from 'hono/conninfo';

/** The options that say where the client IP comes from. */
export interface ClientIpOptions {
  /**
   * Hono's connection-info helper for the runtime the app runs on: `getConnInfo` from
   * '@hono/node-server/conninfo', 'hono/bun', 'hono/deno', 'hono/cloudflare-workers', ... Its
   * `remote.address` is the client IP. Without it, on @hono/node-server the connection's own
   * address (`c.env.incoming.socket.remoteAddress`, what its getConnInfo reads); on any other
   * runtime (or when the helper cannot tell) requests have no client IP and share the one
   * 'ip:unknown' bucket, with the FG_IP_MISSING warning written once (docs/identity.md).
   * Default: none (the Node socket's address where there is one).
   */
  getConnInfo?: (c: Context) => ConnInfo;
  /**
   * The proxies in front of the app, as IPs and CIDR ranges ('10.0.0.0/8', '::1'). Only a request
   * whose connection comes from one of them has its X-Forwarded-For read: the client is the
   * right-most address in it that is not a listed proxy. Never list an address clients can
   * connect from, or they choose their own IP. Default: none, so X-Forwarded-For is never read.
   */
  trustProxy?: readonly string[];
}

export const CLIENT_IP_OPTIONS = ['getConnInfo', 'trustProxy'] as const;

/** Ranges that hold every address: trusting one trusts every proxy, and so every client. */
const EVERY_ADDRESS = new Set(['0.0.0.0/0', '::/0']);

/**
 * What `trustProxy` makes of the client IP, in the core's words (for FG_PROXY_HEADER_UNTRUSTED and
 * FG_TRUST_PROXY_ALL): none listed, some, or a range that holds every address (then the client
 * IP is the left-most X-Forwarded-For entry, which any client writes).
 */
export function trustOf(options: ClientIpOptions): 'none' | 'some' | 'all' {
  const list = options.trustProxy;
  const everyAddress = list?.some((entry) => typeof entry === 'string' && EVERY_ADDRESS.has(entry.trim())) ?? false;
  return everyAddress ? 'all' : (trustProxyOf(list) ?? 'none');
}

/**
 * The peer address of the Node connection under @hono/node-server, which passes `{ incoming,
 * outgoing }` as `c.env`: the address its own getConnInfo reports, read without that import, so an
 * app that leaves getConnInfo out is still keyed per client. Undefined on every other runtime.
 */
function nodeSocketAddress(c: Context): string | undefined {
  const env: unknown = c.env;
  if (env === null || typeof env !== 'object') return undefined;
  const address = (env as { incoming?: { socket?: { remoteAddress?: unknown } } }).incoming?.socket?.remoteAddress;
  return typeof address === 'string' && address !== '' ? address : undefined;
}

/** Builds the IP reader once, from parsed options; FG_INVALID_OPTION for a bad one. */
export function clientIpReader(options: ClientIpOptions): (c: Context) => string | undefined {
  const { getConnInfo } = options;
  if (getConnInfo !== undefined && typeof getConnInfo !== 'function') {
    invalidOption('getConnInfo', getConnInfo, "a function such as getConnInfo from '@hono/node-server/conninfo'");
  }
  const trusted = createAllowList(options.trustProxy, 'trustProxy');
  // Chosen once: the helper the app gave, else the Node socket's address.
  const remote = !getConnInfo ? nodeSocketAddress : (c: Context): string | undefined => {
    try {
      const address = getConnInfo(c).remote.address;
      return typeof address === 'string' && address !== '' ? address : undefined;
    } catch {
      // The helper of another runtime, or app.request() without a server: no client IP (the core's fallback).
      return undefined;
    }
  };
  if (!trusted) return remote;
  return (c) => forwardedClient(remote(c), c.req.raw.headers.get('x-forwarded-for'), trusted);
}
