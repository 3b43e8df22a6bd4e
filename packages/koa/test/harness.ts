// The Koa harness every shared adapter suite drives (@floodgate/adapter-suites): Koa 3 with @koa/router, app-level or per-route.
import Router from '@koa/router';
import { askedDelay, askedStatus, listenOnLoopback, routeLimiters, settleAsked, type AdapterHarness, type AppSpec, type RunningApp } from '@floodgate/adapter-suites';
import Koa, { type Context } from 'koa';
import { rateLimit } from '../src';

/** A JSON body parser for `jsonBody` (Koa has none built in): `ctx.request.body` from a JSON body, 400 for one that does not parse. */
async function parseJson(ctx: Context, next: () => Promise<unknown>): Promise<void> {
  if (ctx.is('application/json')) {
    const chunks: Buffer[] = [];
    for await (const chunk of ctx.req) chunks.push(chunk as Buffer);
    try {
      (ctx.request as { body?: unknown }).body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      ctx.status = 400;
      return;
    }
  }
  await next();
}

export const koaHarness: AdapterHarness = {
  name: 'koa 3',
  mountings: ['app-level', 'per-route'],
  async start(spec: AppSpec): Promise<RunningApp> {
    const statuses: number[] = [];
    const app = new Koa();
    app.silent = true; // the behaviour table's 500 scenario throws on purpose
    // Koa's own setting decides whether X-Forwarded-For is read.
    app.proxy = spec.trustProxy !== undefined && spec.trustProxy !== false;
    // One proxy in front (as the other harnesses trust one hop on loopback); 'all': Koa's default of every hop.
    if (spec.trustProxy === true) app.maxIpsCount = 1;
    if (spec.sendPathMarkers) {
      app.use(async (ctx, next) => {
        ctx.set('X-Before', 'yes');
        await next();
        statuses.push(ctx.status);
        ctx.set('X-After', 'yes'); // a no-op once the headers are sent
      });
    }
    if (spec.jsonBody) app.use(parseJson);
    const limiter = (spec.mounting ?? 'app-level') === 'app-level' ? rateLimit({ ...spec.options, ...spec.groupOptions }) : undefined;
    if (limiter) app.use(limiter);
    const router = new Router();
    for (const route of spec.routes) {
      const answer = (ctx: Context, extra?: object) => {
        const d = ctx.state.rateLimit;
        ctx.status = askedStatus(spec, ctx.headers);
        ctx.body = { route: route.path, remaining: d?.remaining ?? null, reason: d?.reason ?? null, ...extra };
      };
      // Only with delayFromHeader (or settleFromHeader) does the route wait: the same-turn suite needs an answer at once.
      const handler = spec.settleFromHeader
        ? (ctx: Context) => settleAsked(spec, ctx.headers, ctx.state.floodgate).then((extra) => answer(ctx, extra))
        : spec.delayFromHeader
          ? (ctx: Context) => askedDelay(spec, ctx.headers).then(() => answer(ctx))
          : answer;
      router[route.method === 'GET' ? 'get' : route.method === 'ALL' ? 'all' : 'post'](route.path, ...routeLimiters(spec, route, limiter, rateLimit), handler);
    }
    if (spec.usage) {
      if (!limiter) throw new Error('koa harness: a usage route needs the app-level mounting');
      router.get(spec.usage.path, limiter.usageRoute([...spec.usage.routes]));
    }
    app.use(router.routes());
    return listenOnLoopback(app.callback(), statuses);
  },
};
