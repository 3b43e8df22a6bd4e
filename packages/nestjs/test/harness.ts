// The Nest harness every shared adapter suite drives (@floodgate/adapter-suites): Nest 11 on Express or Fastify, the guard global or per route.
import type { AddressInfo } from 'node:net';
import type { ServerResponse } from 'node:http';
import { askedDelay, askedStatus, settleAsked, type AdapterHarness, type AppSpec, type RouteSpec, type RunningApp } from '@floodgate/adapter-suites';
import { All, Controller, Get, Module, Post, Req, Res, UseGuards, type INestApplication, type Type } from '@nestjs/common';
import { APP_GUARD, NestFactory } from '@nestjs/core';
import { ExpressAdapter, type NestExpressApplication } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { FloodgateGuard, FloodgateModule, FloodgateService, RateLimit, SkipRateLimit, type FloodgateModuleOptions, type Reservation } from '../src';

export type Platform = 'express' | 'fastify';

interface HarnessOptions {
  /**
   * The respondDirectly an app gets when its spec leaves it unset. Nest's own default is false
   * (the 429 goes through Nest's exception filters); the direct-response suite tests the opt-in
   * write straight to Node, so it runs with true here.
   */
  respondDirectly?: boolean;
}

type Handler = (
  req: { rateLimit?: { remaining: number; reason: string }; floodgate?: Reservation; headers: Record<string, string | string[] | undefined> },
  res: { status(code: number): unknown },
) => unknown;

/**
 * One controller with a method per route, decorated as an app author would write it: under the
 * app-level mounting (FloodgateGuard as APP_GUARD) a route's options as `@RateLimit(options)` and
 * false as `@SkipRateLimit()`; under per-route, `@UseGuards(FloodgateGuard)` and `@RateLimit()` on
 * each limited route and nothing on a route with false.
 */
function controllerFor(spec: AppSpec, perRoute: boolean, service: () => FloodgateService): Type<unknown> {
  class RoutesController {}
  const proto = RoutesController.prototype as unknown as Record<string, Handler>;
  spec.routes.forEach((route: RouteSpec, i) => {
    const name = `route${i}`;
    const answer = (req: Parameters<Handler>[0], res: Parameters<Handler>[1], extra?: object) => {
      res.status(askedStatus(spec, req.headers));
      return { route: route.path, remaining: req.rateLimit?.remaining ?? null, reason: req.rateLimit?.reason ?? null, ...extra };
    };
    // Only with delayFromHeader (or settleFromHeader) does the route wait (an async handler: Nest awaits what it returns).
    proto[name] = spec.settleFromHeader
      ? (req, res) => settleAsked(spec, req.headers, req.floodgate).then((extra) => answer(req, res, extra))
      : spec.delayFromHeader
        ? (req, res) => askedDelay(spec, req.headers).then(() => answer(req, res))
        : (req, res) => answer(req, res);
    Object.defineProperty(proto[name], 'name', { value: name });
    const descriptor = Object.getOwnPropertyDescriptor(proto, name)!;
    const decorate = (decorator: MethodDecorator) => decorator(proto, name, descriptor);
    (route.method === 'GET' ? Get : route.method === 'ALL' ? All : Post)(route.path)(proto, name, descriptor);
    Req()(proto, name, 0);
    Res({ passthrough: true })(proto, name, 1);
    if (perRoute) {
      if (route.options === false) return;
      decorate(UseGuards(FloodgateGuard));
      decorate(RateLimit(route.options ?? {}));
    } else if (route.options === false) {
      decorate(SkipRateLimit());
    } else if (route.options !== undefined) {
      decorate(RateLimit(route.options));
    }
  });
  if (spec.usage) {
    // A usage handler as an app writes one: FloodgateService.usage answers the caller's own usage.
    const { path, routes } = spec.usage;
    proto.usage = (req) => service().usage(req as never, [...routes]);
    const descriptor = Object.getOwnPropertyDescriptor(proto, 'usage')!;
    Get(path)(proto, 'usage', descriptor);
    Req()(proto, 'usage', 0);
  }
  // groupOptions: the controller's own @RateLimit, which each handler's merges over (FloodgateService, by core's rule).
  if (spec.groupOptions) RateLimit(spec.groupOptions)(RoutesController);
  Controller()(RoutesController);
  return RoutesController;
}

/** Marks Nest's send path for `sendPathMarkers`: X-Before before the guard, X-After on every reply Nest's HTTP adapter sends, statuses when each response finished. */
function markSendPath(app: INestApplication, platform: Platform, statuses: number[]): void {
  app.use((_req: unknown, res: ServerResponse, next: () => void) => {
    res.setHeader('X-Before', 'yes');
    if (platform === 'express') res.on('finish', () => statuses.push(res.statusCode));
    next();
  });
  if (platform === 'fastify') {
    const fastify = app.getHttpAdapter().getInstance() as { addHook(name: 'onResponse', fn: (req: unknown, reply: { statusCode: number }, done: () => void) => void): void };
    fastify.addHook('onResponse', (_req, reply, done) => (statuses.push(reply.statusCode), done()));
  }
  // Nest sends every response it answers itself (a handler's result, an exception filter's) through its adapter's reply().
  const adapter = app.getHttpAdapter() as unknown as { reply(res: unknown, body: unknown, status?: number): unknown; setHeader(res: unknown, name: string, value: string): unknown };
  const reply = adapter.reply.bind(adapter);
  adapter.reply = (res, body, status) => {
    adapter.setHeader(res, 'X-After', 'yes');
    return reply(res, body, status);
  };
}

export function nestHarness(platform: Platform, harnessOptions: HarnessOptions = {}): AdapterHarness {
  return {
    name: `nest 11 on ${platform}`,
    mountings: ['app-level', 'per-route'],
    async start(spec: AppSpec): Promise<RunningApp> {
      const perRoute = (spec.mounting ?? 'app-level') === 'per-route';
      const options: FloodgateModuleOptions = { ...spec.options };
      if (options.respondDirectly === undefined && harnessOptions.respondDirectly !== undefined) options.respondDirectly = harnessOptions.respondDirectly;
      class AppModule {}
      Module({
        imports: [FloodgateModule.forRoot(options)],
        controllers: [controllerFor(spec, perRoute, () => service!)],
        providers: perRoute ? [] : [{ provide: APP_GUARD, useClass: FloodgateGuard }],
      })(AppModule);
      // The platform's own trust-proxy setting decides whether X-Forwarded-For is read: a proxy on loopback, or none.
      // 'all' trusts every hop (Express and Fastify `true`), the setting FG_TRUST_PROXY_ALL warns about.
      const trust = spec.trustProxy === 'all' ? true : spec.trustProxy ? '127.0.0.1' : false;
      const adapter = platform === 'express' ? new ExpressAdapter() : new FastifyAdapter({ trustProxy: trust });
      // abortOnError false: a refused option rejects here instead of ending the process (Nest's default).
      let service: FloodgateService | undefined;
      const app = await NestFactory.create(AppModule, adapter, { logger: false, abortOnError: false });
      service = app.get(FloodgateService);
      try {
        if (platform === 'express') (app as NestExpressApplication).set('trust proxy', trust === '127.0.0.1' ? 'loopback' : trust);
        const statuses: number[] = [];
        if (spec.sendPathMarkers) markSendPath(app, platform, statuses);
        await app.listen(0, '127.0.0.1');
        const server = app.getHttpServer() as import('node:http').Server;
        return {
          port: (server.address() as AddressInfo).port,
          statuses,
          close: async () => {
            server.closeAllConnections();
            await app.close();
          },
        };
      } catch (error) {
        await app.close();
        throw error;
      }
    },
  };
}
