// The HTTP facts of an operation served over Node's http (Yoga, Apollo): the framework's client IP (Express, Fastify), else the peer address with X-Forwarded-For only from the proxies `trustProxy` names; and the headers.
import { createAllowList, forwardedClient, trustProxyOf } from '@floodgate/core/http';
import type { HttpFacts } from './operation-limiter';

/** The part of Node's IncomingMessage read here (a Fetch Request has no peer address). */
export interface NodeRequestLike {
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly socket?: { readonly remoteAddress?: string } | null;
  /** Set by Express and Fastify under their own trust-proxy setting: used as it is when present. */
  readonly ip?: unknown;
}

/** Ranges that hold every address: trusting one trusts every client's own X-Forwarded-For. */
const EVERY_ADDRESS = new Set(['0.0.0.0/0', '::/0']);

/** Builds the reader once from `trustProxy` (FG_INVALID_OPTION for a bad entry). */
export function nodeFactsReader(trustProxy: readonly string[] | undefined): (req: NodeRequestLike | undefined, headers?: Headers) => HttpFacts {
  const trusted = createAllowList(trustProxy, 'trustProxy');
  const trust = trustProxy?.some((e) => EVERY_ADDRESS.has(e.trim())) ? 'all' : (trustProxyOf(trustProxy) ?? 'none');
  return (req, fetchHeaders) => {
    const headers = req?.headers ?? recordOf(fetchHeaders);
    // Served through Express or Fastify: their trust-proxy setting already made the client IP.
    if (typeof req?.ip === 'string' && req.ip !== '') return { ip: req.ip, headers };
    const peer = req?.socket?.remoteAddress || undefined;
    return { ip: clientIp(peer, headers['x-forwarded-for'], trusted), headers, trustProxy: trust };
  };
}

/** A Fetch Headers object as Node's lower-case record (Envelop outside Node). */
function recordOf(headers: Headers | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  headers?.forEach((value, name) => (out[name] = value));
  return out;
}

function clientIp(peer: string | undefined, forwarded: string | string[] | undefined, trusted: ((ip: unknown) => boolean) | undefined): string | undefined {
  return trusted ? forwardedClient(peer, forwarded, trusted) : peer;
}
