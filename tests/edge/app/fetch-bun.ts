// Bun with no framework: core's fetch-style entry (rateLimitFetch) guarding Bun.serve's handler, keyed on the peer address.
import { rateLimitFetch } from '@floodgate/core';

interface BunServer {
  port: number;
  requestIP(request: Request): { address: string } | null;
}
declare const Bun: { serve(options: { port: number; hostname: string; fetch: (request: Request, server: BunServer) => Response | Promise<Response> }): BunServer };

let server: BunServer;
const limiter = rateLimitFetch({ limit: 3, windowMs: '1m', ip: (request) => server.requestIP(request)?.address });
server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: limiter.wrap(() => new Response('ok')) });
console.log(JSON.stringify({ port: server.port }));
