// The shared behaviour table through @floodgate/koa with @koa/router: app-level and per-route, memory and Redis.
import { createServer } from 'node:http';
import Router from '@koa/router';
import Koa, { type Context } from 'koa';
import { parseList } from 'structured-headers';
import request from 'supertest';
import { behaviourStores, runBehaviourTable, type AppSpec, type TestApp } from '../../core/test/http-behaviour';
import { rateLimit } from '../src';

type Mode = 'app-level' | 'per-route';

function build(mode: Mode) {
  return async (spec: AppSpec): Promise<TestApp> => {
    const app = new Koa();
    app.silent = true; // the 500 scenario throws on purpose
    const router = new Router();
    const limiter = mode === 'app-level' ? rateLimit(spec.options) : undefined;
    if (limiter) app.use(limiter);
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
    const agent = request(server);
    return {
      async request(method, url, headers = {}) {
        const call = method === 'GET' ? agent.get(url) : method === 'POST' ? agent.post(url) : agent.head(url);
        const res = await call.set(headers);
        return { status: res.status, headers: res.headers as Record<string, string>, body: res.text ?? '' };
      },
      close: () =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    };
  };
}

const stores = behaviourStores();

for (const mode of ['app-level', 'per-route'] as const) {
  for (const [storeName, store] of Object.entries(stores)) {
    runBehaviourTable({
      name: `koa 3 + @koa/router (${mode}) on ${storeName}`,
      build: build(mode),
      store,
      limitsUnmatched: mode === 'app-level',
      parseList: (value) => parseList(value) as unknown as [unknown, Map<string, unknown>][],
    });
  }
}
