// The client behind trusted proxies, for an adapter that reads X-Forwarded-For itself (Hono, sockets, GraphQL servers): right to left, as proxies append.
import type { AllowList } from './allow-list';

/**
 * The peer's address when it is not a trusted proxy (or there is no header); else the right-most
 * X-Forwarded-For hop that is not a trusted proxy, or the left-most hop when every one is.
 */
export function forwardedClient(peer: string | undefined, forwarded: string | readonly string[] | null | undefined, trusted: AllowList): string | undefined {
  if (peer === undefined || !trusted(peer)) return peer;
  const joined = Array.isArray(forwarded) ? forwarded.join(',') : (forwarded as string | null | undefined);
  if (!joined) return peer;
  const hops = joined.split(',');
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i].trim();
    if (!trusted(hop)) return hop;
  }
  return hops[0].trim();
}
