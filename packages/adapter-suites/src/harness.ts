// The one interface an adapter's test harness implements (packages/<adapter>/test/harness.ts), and every shared adapter suite drives.
import type { Server, RequestListener } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { HttpRateLimitOptions } from '@floodgate/core';

/**
 * How the limiter is mounted. 'app-level': one limiter for the whole app, a route's `options`
 * applied through the framework's per-route way (Express and Koa `limiter.route(options)`, Fastify
 * `config.rateLimit`). 'per-route': no app-wide limiter; each route gets its own limiter built from
 * the global options with its own over them, so requests matching no route pass no limiter.
 */
export type Mounting = 'app-level' | 'per-route';

/** One route of an app. It answers 200 with JSON `{ route, remaining, reason }`, read from the decision the limiter put on the request (null without one). */
export interface RouteSpec {
  /** 'ALL': registered for every method, the framework's way (Express and Koa `all`, Fastify `all`'s method list, Hono `app.all`, Nest `@All()`). */
  readonly method: 'GET' | 'POST' | 'ALL';
  /** The framework's route pattern, e.g. '/users/:id'. */
  readonly path: string;
  /** Per-route options over the global ones; false: the route is not limited; left out: the route as the mounting gives it. */
  readonly options?: HttpRateLimitOptions<any> | false;
}

/**
 * What an app is made of. A new suite that needs something more (another middleware, another
 * framework setting) adds an optional field here, off when left out, and each harness implements it.
 */
export interface AppSpec {
  /** The limiter's global options. */
  readonly options: HttpRateLimitOptions<any>;
  readonly routes: readonly RouteSpec[];
  /** Default 'app-level'. A harness throws for a mounting it does not list in `mountings`. */
  readonly mounting?: Mounting;
  /**
   * Options every route of the app inherits at the framework's group level, between the global
   * options and a route's own: Nest a controller's `@RateLimit(groupOptions)`. A framework with no
   * such level (Express, Fastify, Koa, Hono) gives them to the app-level limiter over `options`, the
   * layer a route inherits from there. Either way a route's options merge over them by core's rule
   * (`mergeRouteOptions`): the suite `runRouteMergeSuite` holds every adapter to it. App-level only.
   */
  readonly groupOptions?: HttpRateLimitOptions<any>;
  /**
   * Trust a proxy on loopback the framework's own way (Express `trust proxy`, Fastify `trustProxy`,
   * Koa `app.proxy` with `maxIpsCount: 1`), so that X-Forwarded-For is read; or trust none (the
   * default); or 'all': trust every hop (Express and Fastify `true`, Koa `app.proxy` alone), the
   * setting FG_TRUST_PROXY_ALL warns about.
   */
  readonly trustProxy?: boolean | 'all';
  /**
   * Mark the framework's paths, for telling Floodgate's direct 429 from one the framework sent: a
   * middleware or hook BEFORE the limiter sets `X-Before: yes`; on the framework's own send path,
   * something sets `X-After: yes` on every response the framework sends itself and on no other
   * (Express: a wrapper around `res.send`, Fastify: onSend, Koa: a middleware after `await next()`);
   * and the framework's after-response hook logs each status into `statuses`.
   */
  readonly sendPathMarkers?: boolean;
  /**
   * Every route answers with the status the request asks for in its `x-status` header (default
   * 200), so that a suite can tell the limiter how a request turned out (`countOnly`).
   */
  readonly statusFromHeader?: boolean;
  /**
   * Every route waits the ms its request asks for in its `x-delay` header (default 0, at most
   * 10_000) before it answers, so that a suite can hold requests in flight (`concurrency`).
   */
  readonly delayFromHeader?: boolean;
  /**
   * Mount `GET usage.path` answering the caller's own usage of `usage.routes` through the adapter's
   * usage helper, made from the app-level limiter (Express, Koa, Hono `limiter.usageRoute(routes)`,
   * Fastify `app.rateLimitUsage(routes)`, Nest `FloodgateService.usage(req, routes)`); app-level only.
   */
  readonly usage?: { readonly path: string; readonly routes: readonly string[] };
  /**
   * Every route settles the actual costs its request names in `x-actual` ('12', or '12,30' to settle
   * twice) through the reservation the adapter hands the handler (`req.floodgate` or the framework's
   * own place), one after the other, and adds `settle: SettleAnswer | null` (null without a
   * reservation) to its JSON (settleAsked).
   */
  readonly settleFromHeader?: boolean;
  /**
   * Parse JSON request bodies before the limiter runs, the framework's usual way (Express
   * `express.json()`, Koa and Hono a small parser middleware, Fastify its own parser with the
   * limiter in `preHandler`, Nest its platform's default), so that a route's `extraKeys` can read
   * `req.body`; Hono's key functions then get `{ headers, body }`. A body that is not JSON: 400.
   */
  readonly jsonBody?: boolean;
}

/** What a route answers under `settleFromHeader`: each settle's outcome, and the first one's charge and cap. */
export interface SettleAnswer {
  readonly outcomes: readonly string[];
  readonly charged: number | null;
  readonly capped: boolean;
}

/** The settles a route makes under `settleFromHeader`, with the reservation the adapter gave it; undefined when the spec does not ask. */
export async function settleAsked(
  spec: AppSpec,
  headers: Record<string, string | string[] | undefined>,
  reservation: { settle(actual: number): Promise<{ outcome: string; charged: number | null; capped: boolean }> } | undefined,
): Promise<{ settle: SettleAnswer | null } | undefined> {
  if (!spec.settleFromHeader) return undefined;
  const asked = headers['x-actual'];
  if (!reservation || typeof asked !== 'string') return { settle: null };
  const results = [];
  for (const part of asked.split(',')) results.push(await reservation.settle(Number(part)));
  return { settle: { outcomes: results.map((r) => r.outcome), charged: results[0].charged, capped: results[0].capped } };
}

/** The wait a route takes under `delayFromHeader`: the request's `x-delay` ms, else 0. */
export function askedDelay(spec: AppSpec, headers: Record<string, string | string[] | undefined>): Promise<void> {
  const asked = spec.delayFromHeader ? Number(headers['x-delay']) : 0;
  const ms = Number.isInteger(asked) && asked > 0 ? Math.min(asked, 10_000) : 0;
  // Unref'd: a handler still waiting when its client went away (the abort tests) holds no test run open.
  return ms === 0 ? Promise.resolve() : new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** The status a route answers under `statusFromHeader`: the request's `x-status`, else 200. */
export function askedStatus(spec: AppSpec, headers: Record<string, string | string[] | undefined>): number {
  const asked = spec.statusFromHeader ? Number(headers['x-status']) : NaN;
  return Number.isInteger(asked) && asked >= 200 && asked <= 599 ? asked : 200;
}

/** A listening app. */
export interface RunningApp {
  /** On 127.0.0.1. */
  readonly port: number;
  /** With `sendPathMarkers`, the status of every finished response as the framework's after-response hook logged it (it may run after the client has the response); else empty. */
  readonly statuses: readonly number[];
  /**
   * The app's own Fetch-API entry (Hono's `app.fetch`), in-process: where a runtime on the Fetch API
   * (Bun, Deno, Workers) lets any method token reach the app. Absent for a framework behind Node's
   * HTTP parser, which answers 400 itself to a method it does not know.
   */
  readonly fetch?: (request: Request) => Promise<Response>;
  /** Closes the server and every connection still open to it. */
  close(): Promise<void>;
}

export interface AdapterHarness {
  /** The framework and version, e.g. 'express 5'. */
  readonly name: string;
  /** The mountings this framework offers; the behaviour table runs on each. */
  readonly mountings: readonly Mounting[];
  /** True when every RunningApp it starts has `fetch` (any method token reaches the app). */
  readonly fetchEntry?: boolean;
  /** Builds and starts an app; rejects, leaving nothing open, when the limiter refuses its options. */
  start(spec: AppSpec): Promise<RunningApp>;
}

/**
 * The limiter middleware a route gets under the spec's mounting, the rule every harness follows:
 * with an app-level limiter, its per-route one when the route has options (false included) and none
 * when it has none; without one, a limiter of the route's own, built by `build` from the global
 * options with the route's over them, and none for false.
 */
export function routeLimiters<M>(
  spec: AppSpec,
  route: RouteSpec,
  appLimiter: { route(options: HttpRateLimitOptions<any> | false): M } | undefined,
  build: (options: HttpRateLimitOptions<any>) => M,
): M[] {
  if (appLimiter) return route.options === undefined ? [] : [appLimiter.route(route.options)];
  return route.options === false ? [] : [build({ ...spec.options, ...route.options })];
}

/** Serves `listener` on a free loopback port: the RunningApp of a framework that hands over a Node request listener (Express, Koa). */
export async function listenOnLoopback(listener: RequestListener, statuses: readonly number[]): Promise<RunningApp> {
  const server: Server = createServer(listener);
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
}
