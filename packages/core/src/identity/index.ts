// Who is one caller: API key first, else the client IP (IPv4-mapped -> IPv4, IPv6 -> its /64).
// FIRST VERSION: a minimal identity so the adapters can be built; the identity work replaces the
// internals (ipaddr.js normalisation, resolveKey cache, hostile-input handling) behind this signature.

/** The facts an adapter reads from its framework's request. */
export interface RequestFacts {
  /** The client IP as the framework reports it under its own trust-proxy setting. */
  readonly ip: string | undefined;
  /** Request headers with lower-case names, as Node's IncomingHttpHeaders. */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly method: string;
  /** The matched route pattern ('/users/:id'), never the raw URL; undefined when none matched. */
  readonly route: string | undefined;
}

export interface IdentityOptions {
  /** Headers that carry an API key, checked in order. `Authorization: Bearer <key>` is read from 'authorization'. Default ['authorization', 'x-api-key']; false to key on IP only. */
  apiKeyHeaders?: string[] | false;
  /** Prefix length IPv6 addresses are keyed on. Default 64. */
  ipv6Subnet?: number;
}

export interface Identity {
  /** What the bucket is keyed on; hashed before it reaches any store. */
  readonly subject: string;
  readonly kind: 'api-key' | 'ip' | 'custom' | 'unknown';
  /** What `resolveKey` returned for this API key, when one is configured. */
  readonly account?: unknown;
}

export type Identify = (facts: RequestFacts) => Identity | Promise<Identity>;

export function createIdentify(options: IdentityOptions = {}): Identify {
  const headers = options.apiKeyHeaders === false ? [] : (options.apiKeyHeaders ?? ['authorization', 'x-api-key']);
  return (facts) => {
    for (const name of headers) {
      const raw = facts.headers[name];
      const value = Array.isArray(raw) ? raw[0] : raw;
      if (!value) continue;
      const key = name === 'authorization' ? /^Bearer\s+(\S+)$/i.exec(value)?.[1] : value.trim();
      if (key) return { subject: `key:${key}`, kind: 'api-key' };
    }
    if (!facts.ip) return { subject: 'ip:unknown', kind: 'unknown' };
    const ip = facts.ip.startsWith('::ffff:') ? facts.ip.slice(7) : facts.ip;
    return { subject: `ip:${ip}`, kind: 'ip' };
  };
}
