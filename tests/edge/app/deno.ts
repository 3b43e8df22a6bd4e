// The app on Deno: Deno.serve on a free loopback port, announced on stdout as JSON.
import { getConnInfo } from 'hono/deno';
import { makeApp } from './app';

declare const Deno: {
  serve(options: { port: number; hostname: string; onListen(address: { port: number }): void }, handler: (request: Request, info: unknown) => Response | Promise<Response>): unknown;
};

const app = makeApp(getConnInfo);
Deno.serve({ port: 0, hostname: '127.0.0.1', onListen: ({ port }) => console.log(JSON.stringify({ port })) }, (request, info) => app.fetch(request, info));
