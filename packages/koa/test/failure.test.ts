// Failure modes through @floodgate/koa: fail-open, fail-closed and local routes on one app while Redis is killed, paused and restarted.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Router from '@koa/router';
import Koa, { type Context } from 'koa';
import { runFaultScenarios, type FaultAppSpec } from '../../core/test/failure-http';
import { rateLimit } from '../src';

runFaultScenarios('koa (app-level, per-route overrides on @koa/router)', async (spec: FaultAppSpec) => {
  const app = new Koa();
  const router = new Router();
  const limiter = rateLimit(spec.options);
  app.use(limiter);
  for (const route of spec.routes) {
    const method = route.method === 'GET' ? 'get' : 'post';
    router[method](route.path, limiter.route(route.options), (ctx: Context) => {
      ctx.body = { reason: ctx.state.rateLimit?.reason ?? null };
    });
  }
  app.use(router.routes());
  const server = createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
});
