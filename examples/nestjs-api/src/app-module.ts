// The nestjs-api example app: FloodgateModule on the app's Redis client (forRootAsync), FloodgateGuard on every route, per-handler options.
import 'reflect-metadata';
import { Body, Controller, Get, Inject, Module, Param, ParseIntPipe, Post, Query, Req, Res, type DynamicModule } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { MemoryStore, RedisStore, type Decision } from '@floodgate/core';
import { FloodgateGuard, FloodgateModule, FloodgateService, RateLimit, SkipRateLimit } from '@floodgate/nestjs';
import type { Redis } from 'ioredis';

/** Requests per minute for each caller on each route. */
export const LIMIT = 100;
/** Units one report draws: reports are ten times as costly to build as a read. */
export const REPORT_COST = 10;
/** Searches per 10 seconds for each caller. */
export const SEARCH_LIMIT = 10;

/** The app's Redis client, as an app provides it to every module that needs it. */
export const REDIS = Symbol('REDIS');

export interface AppOptions {
  /** The ioredis client the limiter's RedisStore uses (the app never closes it); without one, memory (per process). */
  redis?: Redis;
  /** How long the RedisStore waits for Redis (RedisStoreOptions.timeoutMs). Default Floodgate's, 100 ms. */
  redisTimeoutMs?: number;
  /** Key prefix in Redis. Default 'fg'. Tests give each run its own. */
  prefix?: string;
  /** The API keys this app issued, key -> account. Default: one demo key, 'demo'. */
  apiKeys?: Readonly<Record<string, string>>;
}

type RateLimited = { rateLimit?: Decision };

@Controller('widgets')
class WidgetsController {
  @Get()
  list(@Req() req: RateLimited) {
    return { widgets: [{ id: 1 }, { id: 2 }], remaining: req.rateLimit?.remaining ?? null };
  }

  // One bucket per caller for every id: the route pattern 'GET /widgets/:id', never the URL.
  @Get(':id')
  one(@Param('id', ParseIntPipe) id: number) {
    return { id };
  }
}

@Controller()
class ReportsController {
  // The same bucket definition as every route, but a report draws REPORT_COST units.
  @Post('reports')
  @RateLimit({ cost: REPORT_COST })
  create(@Body() body: { from?: unknown; to?: unknown } | undefined) {
    return { report: { from: body?.from ?? null, to: body?.to ?? null, status: 'queued' } };
  }

  // A stricter limit of its own, and a sliding window for it.
  @Get('search')
  @RateLimit({ limit: SEARCH_LIMIT, windowMs: '10s', algorithm: 'sliding-window-log' })
  search(@Query('q') q?: string) {
    return { q: q ?? '', results: [] };
  }
}

@Controller()
@SkipRateLimit()
class HealthController {
  constructor(@Inject(FloodgateService) private readonly floodgate: FloodgateService) {}

  @Get('health')
  health() {
    return { ok: true };
  }

  // 503 while the store's circuit breaker is open: a load balancer sees the outage.
  @Get('healthz')
  healthz(@Res({ passthrough: true }) res: { status(code: number): unknown }) {
    const health = this.floodgate.health();
    // Express's res and Fastify's reply both take status().
    res.status(health.healthy ? 200 : 503);
    return health;
  }
}

/**
 * The app module: the Redis client comes from the app's own provider and reaches Floodgate
 * through forRootAsync's inject, the Nest way of building a client from configuration.
 */
export function appModule(options: AppOptions = {}): DynamicModule {
  const apiKeys = options.apiKeys ?? { demo: 'demo-account' };
  @Module({ providers: [{ provide: REDIS, useValue: options.redis ?? null }], exports: [REDIS] })
  class RedisModule {}
  @Module({})
  class AppModule {}
  return {
    module: AppModule,
    imports: [
      FloodgateModule.forRootAsync({
        imports: [RedisModule],
        inject: [REDIS],
        useFactory: (redis: Redis | null) => ({
          store: redis ? new RedisStore({ client: redis, timeoutMs: options.redisTimeoutMs }) : new MemoryStore(),
          prefix: options.prefix,
          limit: LIMIT,
          windowMs: '1m',
          // Only a key this app issued gets a bucket of its own; an invented one is limited by its IP.
          resolveKey: async (key: string) => (Object.hasOwn(apiKeys, key) ? { account: apiKeys[key] } : null),
        }),
      }),
    ],
    controllers: [WidgetsController, ReportsController, HealthController],
    providers: [{ provide: APP_GUARD, useClass: FloodgateGuard }],
  };
}
