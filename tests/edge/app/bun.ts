// The app on Bun: Bun.serve on a free loopback port, announced on stdout as JSON.
import { getConnInfo } from 'hono/bun';
import { makeApp } from './app';

declare const Bun: { serve(options: { port: number; hostname: string; fetch: (request: Request, server: unknown) => Response | Promise<Response> }): { port: number } };

const app = makeApp(getConnInfo);
const server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: (request, bun) => app.fetch(request, bun) });
console.log(JSON.stringify({ port: server.port }));
