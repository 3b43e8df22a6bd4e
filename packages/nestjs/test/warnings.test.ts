// The first-hour traps in Nest on Express and Fastify: the shared warning suite, the guard beside another Floodgate limiter on the same request, and no guard at all.
import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import { Agent } from 'node:http';
import { Controller, Get, Module, Post, UseGuards, type INestApplication } from '@nestjs/common';
import { APP_GUARD, NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { getStatus, recordingLogger, runWarningSuite } from '@floodgate/adapter-suites';
import { rateLimit as expressRateLimit } from '@floodgate/express';
import { rateLimit as fastifyRateLimit } from '@floodgate/fastify';
import { FloodgateGuard, FloodgateModule, FloodgateService, SkipRateLimit, type FloodgateModuleOptions } from '../src';
import { nestHarness, type Platform } from './harness';

for (const platform of ['express', 'fastify'] as Platform[]) runWarningSuite(nestHarness(platform));

@Controller()
class ReportsController {
  @Get('reports')
  list() {
    return { ok: true };
  }
}

describe('nestjs: the guard and a platform limiter on one request', () => {
  const agent = new Agent({ keepAlive: true });
  let apps: INestApplication[] = [];
  afterEach(async () => {
    await Promise.all(apps.map((a) => a.close()));
    apps = [];
  });
  afterAll(() => agent.destroy());

  /** A Nest app with FloodgateGuard as APP_GUARD and, when `platformLimiter`, the platform package's own rateLimit() app-wide as well. */
  async function start(platform: Platform, module: FloodgateModuleOptions, platformLimiter?: Record<string, unknown>): Promise<number> {
    class AppModule {}
    Module({ imports: [FloodgateModule.forRoot(module)], controllers: [ReportsController], providers: [{ provide: APP_GUARD, useClass: FloodgateGuard }] })(AppModule);
    const app = await NestFactory.create(AppModule, platform === 'express' ? new ExpressAdapter() : new FastifyAdapter(), { logger: false, abortOnError: false });
    apps.push(app);
    // Moving from app.use(rateLimit()) to the guard, and keeping both: the Express middleware, or the Fastify plugin.
    if (platformLimiter && platform === 'express') app.use(expressRateLimit(platformLimiter));
    // Cast: @nestjs/platform-fastify pins its own fastify (5.11) beside the one @floodgate/fastify is typed against (5.12).
    if (platformLimiter && platform === 'fastify') await (app as NestFastifyApplication).register(fastifyRateLimit as never, platformLimiter);
    await app.listen(0, '127.0.0.1');
    return (app.getHttpServer().address() as AddressInfo).port;
  }

  it.each(['express', 'fastify'] as Platform[])('%s: the platform package app-wide and FloodgateGuard: FG_COUNTED_TWICE once; shadow or switched off: none', async (platform) => {
    for (const [second, expected] of [[{}, ['FG_COUNTED_TWICE']], [{ shadow: true }, []], [{ warnings: { FG_COUNTED_TWICE: false } }, []]] as const) {
      const rec = recordingLogger();
      const port = await start(platform, { limit: 1000, logger: rec.logger, ...second }, { limit: 100, logger: rec.logger });
      for (let i = 0; i < 4; i++) expect(await getStatus(agent, port, '/reports')).toBe(200);
      expect(rec.codes()).toEqual(expected);
      if (expected.length) expect(rec.lines[0]).toContain('one request to GET /reports was counted by');
    }
  });

  it.each(['express', 'fastify'] as Platform[])('%s: FloodgateGuard alone: each request counted once, no warning', async (platform) => {
    const rec = recordingLogger();
    const port = await start(platform, { limit: 3, logger: rec.logger });
    expect([await getStatus(agent, port, '/reports'), await getStatus(agent, port, '/reports'), await getStatus(agent, port, '/reports'), await getStatus(agent, port, '/reports')]).toEqual([200, 200, 200, 429]);
    expect(rec.lines).toEqual([]);
  });
});

@Controller('widgets')
class WidgetsController {
  @Get()
  list() {
    return [];
  }

  @Post()
  create() {
    return {};
  }
}

@Controller('guarded')
@UseGuards(FloodgateGuard)
class GuardedController {
  @Get()
  list() {
    return [];
  }
}

@Controller('health')
@SkipRateLimit()
class HealthController {
  @Get()
  health() {
    return { ok: true };
  }
}

describe('nestjs: FloodgateModule imported, FloodgateGuard registered nowhere', () => {
  let apps: INestApplication[] = [];
  afterEach(async () => {
    await Promise.all(apps.map((a) => a.close()));
    apps = [];
  });

  /** Inits an app (routes registered, onModuleInit run) and returns the warnings it wrote. */
  async function init(platform: Platform, controllers: Function[], extra: { providers?: unknown[]; globalGuard?: boolean; warnings?: FloodgateModuleOptions['warnings'] } = {}) {
    const rec = recordingLogger();
    class AppModule {}
    Module({ imports: [FloodgateModule.forRoot({ logger: rec.logger, warnings: extra.warnings })], controllers: controllers as never[], providers: (extra.providers ?? []) as never[] })(AppModule);
    const app = await NestFactory.create(AppModule, platform === 'express' ? new ExpressAdapter() : new FastifyAdapter(), { logger: false, abortOnError: false });
    apps.push(app);
    if (extra.globalGuard) app.useGlobalGuards(new FloodgateGuard(app.get(FloodgateService)));
    await app.init();
    return rec;
  }

  it.each(['express', 'fastify'] as Platform[])('%s: FG_ROUTE_NOT_LIMITED once at init, naming a route, how many more, and both fixes', async (platform) => {
    const rec = await init(platform, [WidgetsController, GuardedController, HealthController]);
    expect(rec.codes()).toEqual(['FG_ROUTE_NOT_LIMITED']);
    // The guarded controller and the @SkipRateLimit() one are not among them.
    expect(rec.lines[0]).toContain('GET /widgets (and 1 more route) is not rate limited: FloodgateModule is imported but no FloodgateGuard limits it');
    expect(rec.lines[0]).toContain('{ provide: APP_GUARD, useClass: FloodgateGuard }');
    expect(rec.lines[0]).toContain('@UseGuards(FloodgateGuard)');
  });

  it.each(['express', 'fastify'] as Platform[])('%s: APP_GUARD, @UseGuards on every limited controller, app.useGlobalGuards(), or switched off by name: nothing', async (platform) => {
    const quiet = [
      await init(platform, [WidgetsController, HealthController], { providers: [{ provide: APP_GUARD, useClass: FloodgateGuard }] }),
      await init(platform, [GuardedController, HealthController]),
      await init(platform, [WidgetsController], { globalGuard: true }),
      await init(platform, [WidgetsController], { warnings: { FG_ROUTE_NOT_LIMITED: false } }),
    ];
    expect(quiet.map((r) => r.lines)).toEqual([[], [], [], []]);
  });
});
