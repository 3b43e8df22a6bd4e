// Deno with no framework: core's fetch-style entry (rateLimitFetch) guarding Deno.serve's handler, keyed on the peer address Deno passes.
import { rateLimitFetch } from '@floodgate/core';

interface ServeInfo {
  remoteAddr: { hostname: string };
}
declare const Deno: {
  serve(options: { port: number; hostname: string; onListen(address: { port: number }): void }, handler: (request: Request, info: ServeInfo) => Response | Promise<Response>): unknown;
};

// The peer address is the handler's second argument, not the request's: kept per request for `ip`.
const peers = new WeakMap<Request, string>();
const limiter = rateLimitFetch({ limit: 3, windowMs: '1m', ip: (request) => peers.get(request) });
const guarded = limiter.wrap(() => new Response('ok'));
Deno.serve({ port: 0, hostname: '127.0.0.1', onListen: ({ port }) => console.log(JSON.stringify({ port })) }, (request, info) => {
  peers.set(request, info.remoteAddr.hostname);
  return guarded(request);
});
