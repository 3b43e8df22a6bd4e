// FG_TRUST_PROXY_ALL and FG_PROXY_HEADER_UNTRUSTED: the framework's trust-proxy setting, checked from what identify is handed.
import { warnOnce } from '../base/warnings';
import type { RequestFacts, ResolvedIdentityOptions } from './types';

/** Headers only a proxy should write: seen while the framework trusts none, they are a sign of a proxy it ignores. */
const PROXY_HEADERS = ['x-forwarded-for', 'forwarded', 'x-real-ip'] as const;

/** The trust-proxy checks of one identify function. Each runs until it has been through the logger once (never when switched off). */
export class ProxyChecks {
  private trustAllOpen: boolean;
  private headerOpen: boolean;
  constructor(private readonly o: ResolvedIdentityOptions) {
    this.trustAllOpen = o.warnings.has('FG_TRUST_PROXY_ALL');
    this.headerOpen = o.warnings.has('FG_PROXY_HEADER_UNTRUSTED');
  }

  /** Whether a request still needs looking at: a comparison per request until then, nothing after. */
  get open(): boolean {
    return this.trustAllOpen || this.headerOpen;
  }

  check(facts: RequestFacts): void {
    if (facts.trustProxy === 'all' && this.trustAllOpen) {
      this.trustAllOpen = false;
      warnOnce(
        this.o.logger,
        this.o.warnings,
        'FG_TRUST_PROXY_ALL',
        "the framework trusts every proxy (Express 'trust proxy' true, Fastify trustProxy: true, Koa app.proxy without app.maxIpsCount), so the client IP is the first X-Forwarded-For entry, which any client writes: a client can get a fresh bucket per request. Trust only the hops you run: a hop count (1 for one proxy) or your proxies' addresses (docs/identity.md#trusting-a-proxy-per-framework)",
      );
    } else if (facts.trustProxy === 'none' && this.headerOpen) {
      const headers = facts.headers;
      if (!headers) return;
      // Named reads, no closure: without a proxy in front this runs on every request.
      const seen =
        headers['x-forwarded-for'] !== undefined ? PROXY_HEADERS[0] : headers.forwarded !== undefined ? PROXY_HEADERS[1] : headers['x-real-ip'] !== undefined ? PROXY_HEADERS[2] : undefined;
      if (!seen) return;
      this.headerOpen = false;
      warnOnce(
        this.o.logger,
        this.o.warnings,
        'FG_PROXY_HEADER_UNTRUSTED',
        `a request carried ${seen} but the framework trusts no proxy, so the client IP is the peer's address: behind a proxy you run, every caller shares its one bucket. If a proxy you run sets ${seen}, trust it (Express app.set('trust proxy', 1), Fastify trustProxy: 1, Koa app.proxy = true with app.maxIpsCount = 1); if no proxy is in front, a client wrote it and ignoring it is right (docs/identity.md#trusting-a-proxy-per-framework)`,
      );
    }
  }
}
