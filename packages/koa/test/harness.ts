// The Koa harness every shared adapter suite drives (@floodgate/testing/adapter-suites): Koa 3 with @koa/router, app-level or per-route.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Router from '@koa/router';
import type { AdapterHarness, AppSpec, RunningApp } from '@floodgate/testing/adapter-suites';
import Koa, { type Context } from 'koa';
import { rateLimit } from '../src';

export const koaHarness: AdapterHarness = {
  name: 'koa 3',
  mountings: ['app-level', 'per-route'],
  async start(spec: AppSpec): Promise<RunningApp> {
    const statuses: number[] = [];
    const app = new Koa();
    app.silent = true; // the behaviour table's 500 scenario throws on purpose
    // Koa's own setting decides whether X-Forwarded-For is read.
    app.proxy = spec.trustProxy ?? false;
    if (spec.sendPathMarkers) {
      app.use(async (ctx, next) => {
        ctx.set('X-Before', 'yes');
        await next();
        statuses.push(ctx.status);
        ctx.set('X-After', 'yes'); // a no-op once the headers are sent
      });
    }
    const limiter = (spec.mounting ?? 'app-level') === 'app-level' ? rateLimit(spec.options) : undefined;
    if (limiter) app.use(limiter);
    const router = new Router();
    for (const route of spec.routes) {
      const handler = (ctx: Context) => {
        const d = ctx.state.rateLimit;
        ctx.body = { route: route.path, remaining: d?.remaining ?? null, reason: d?.reason ?? null };
      };
      const method = route.method === 'GET' ? 'get' : 'post';
      if (limiter) {
        if (route.options === undefined) router[method](route.path, handler);
        else router[method](route.path, limiter.route(route.options), handler);
      } else if (route.options === false) {
        router[method](route.path, handler);
      } else {
        router[method](route.path, rateLimit({ ...spec.options, ...route.options }), handler);
      }
    }
    app.use(router.routes());
    const server = createServer(app.callback());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return {
      port: (server.address() as AddressInfo).port,
      statuses,
      close: () =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    };
  },
};
