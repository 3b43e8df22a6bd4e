// A framework's trust-proxy setting in core's words ('none', 'some', 'all'), for FG_TRUST_PROXY_ALL and FG_PROXY_HEADER_UNTRUSTED: one mapping for every adapter.
import type { RequestFacts } from './types';

/**
 * How a framework's trust-proxy setting makes the client IP: `true` trusts every hop ('all', the
 * left-most X-Forwarded-For entry, which any client writes); `undefined`, `false` and `0` trust
 * none; anything else (a hop count, a list of proxies, a function) trusts some. Express's
 * `trust proxy`, Fastify's `trustProxy` and NestJS's platforms pass their setting as it is; Koa
 * passes `app.proxy ? app.maxIpsCount || true : false`; Hono its `trustProxy` list (`true` when an
 * entry holds every address).
 */
export function trustProxyOf(setting: unknown): RequestFacts['trustProxy'] {
  if (setting === true) return 'all';
  if (setting === undefined || setting === false || setting === 0) return 'none';
  if (Array.isArray(setting) && setting.length === 0) return 'none';
  return 'some';
}
