// The Hono harness every shared adapter suite drives (@floodgate/adapter-suites): Hono 4 on @hono/node-server, app-level or per-route.
import { getRequestListener } from '@hono/node-server';
import { getConnInfo } from '@hono/node-server/conninfo';
import { askedDelay, askedStatus, listenOnLoopback, routeLimiters, settleAsked, type AdapterHarness, type AppSpec, type RunningApp } from '@floodgate/adapter-suites';
import { Hono, type Context } from 'hono';
import { rateLimit, type RateLimitOptions } from '../src';

/** The harness's Node request: the runtime's connection info, and a proxy on loopback trusted when the spec asks (Hono has no setting of its own). */
const clientIp = (spec: AppSpec): Pick<RateLimitOptions, 'getConnInfo' | 'trustProxy'> =>
  spec.trustProxy === 'all'
    ? { getConnInfo, trustProxy: ['0.0.0.0/0', '::/0'] } // every address: the setting FG_TRUST_PROXY_ALL warns about
    : spec.trustProxy
      ? { getConnInfo, trustProxy: ['127.0.0.1', '::1'] }
      : { getConnInfo };

/**
 * The shared suites' cost, key and skip functions read `req.headers` as Node's IncomingHttpHeaders;
 * Hono hands them its context `c`. This gives those functions (and nothing else) a
 * `{ headers }` record made from the Web request's headers in its place.
 */
function nodeShaped(options: RateLimitOptions): RateLimitOptions {
  const view = (c: Context) => ({ headers: Object.fromEntries(c.req.raw.headers), body: c.get('jsonBody' as never) }) as unknown as Context;
  const wrap = <A extends unknown[], R>(fn: ((c: Context, ...rest: A) => R) | undefined) => (fn ? (c: Context, ...rest: A) => fn(view(c), ...rest) : undefined);
  const out: RateLimitOptions = { ...options };
  if (typeof options.cost === 'function') out.cost = wrap(options.cost);
  if (options.key) out.key = wrap(options.key);
  if (options.skip) out.skip = wrap(options.skip);
  if (options.extraKeys) out.extraKeys = options.extraKeys.map((k) => ({ ...k, key: wrap(k.key)! }));
  return out;
}

export const honoHarness: AdapterHarness = {
  name: 'hono 4',
  mountings: ['app-level', 'per-route'],
  fetchEntry: true,
  async start(given: AppSpec): Promise<RunningApp> {
    const spec: AppSpec = {
      ...given,
      options: nodeShaped(given.options as RateLimitOptions),
      routes: given.routes.map((r) => (r.options ? { ...r, options: nodeShaped(r.options as RateLimitOptions) } : r)),
    };
    const statuses: number[] = [];
    const app = new Hono();
    // The behaviour table's 500 scenario throws on purpose: answer it without a stack trace per test.
    app.onError((_error, c) => c.text('Internal Server Error', 500));
    if (spec.sendPathMarkers) {
      app.use(async (c, next) => {
        c.header('X-Before', 'yes');
        await next();
        statuses.push(c.res.status);
        c.header('X-After', 'yes');
      });
    }
    if (spec.jsonBody) {
      // Before the limiter, so that extraKeys can read the body (through nodeShaped's view).
      app.use(async (c, next) => {
        if (c.req.header('content-type')?.toLowerCase().startsWith('application/json')) {
          try {
            c.set('jsonBody' as never, (await c.req.json()) as never);
          } catch {
            return c.text('Bad Request', 400);
          }
        }
        await next();
      });
    }
    const build = (options: RateLimitOptions) => rateLimit({ ...clientIp(spec), ...options });
    const limiter = (spec.mounting ?? 'app-level') === 'app-level' ? build({ ...spec.options, ...spec.groupOptions } as RateLimitOptions) : undefined;
    if (limiter) app.use(limiter);
    for (const route of spec.routes) {
      const answer = (c: Context, extra?: object) => {
        const d = c.get('rateLimit');
        return c.json({ route: route.path, remaining: d?.remaining ?? null, reason: d?.reason ?? null, ...extra }, askedStatus(spec, Object.fromEntries(c.req.raw.headers)) as 200);
      };
      // Only with delayFromHeader (or settleFromHeader) does the route wait: the same-turn suite needs an answer at once.
      const handler = spec.settleFromHeader
        ? (c: Context) => settleAsked(spec, Object.fromEntries(c.req.raw.headers), c.get('floodgate')).then((extra) => answer(c, extra))
        : spec.delayFromHeader
          ? (c: Context) => askedDelay(spec, Object.fromEntries(c.req.raw.headers)).then(() => answer(c))
          : answer;
      const register = route.method === 'GET' ? app.get.bind(app) : route.method === 'ALL' ? app.all.bind(app) : app.post.bind(app);
      // One parameter, as an app writes a route: Hono (and Floodgate) take an app.all() handler of (c, next) for middleware.
      register(route.path, ...(routeLimiters(spec, route, limiter, build) as []), (c: Context) => handler(c));
    }
    if (spec.usage) {
      if (!limiter) throw new Error('hono harness: a usage route needs the app-level mounting');
      app.get(spec.usage.path, limiter.usageRoute([...spec.usage.routes]));
    }
    const running = await listenOnLoopback(getRequestListener(app.fetch), statuses);
    // In-process, as Bun, Deno or Workers call it: any method token reaches the app (no Node parser in front).
    return { ...running, fetch: async (request: Request) => app.fetch(request) };
  },
};
