// FloodgateModule as an app author writes it, on both platforms and a real Redis: 200, 200, 429; forRootAsync; decorators; filters; route patterns.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import {
  ArgumentsHost,
  Catch,
  Controller,
  Get,
  HttpException,
  Inject,
  Injectable,
  Module,
  Param,
  Post,
  UseGuards,
  UseInterceptors,
  type CallHandler,
  type ExceptionFilter,
  type INestApplication,
  type NestInterceptor,
} from '@nestjs/common';
import { APP_FILTER, APP_GUARD, NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { MemoryStore, QUOTA_EXCEEDED_TYPE, RedisStore, type RateLimitEvent } from '@floodgate/core';
import { startRedis, type RedisServer } from '@floodgate/testing';
import { Redis } from 'ioredis';
import { FloodgateGuard, FloodgateModule, FloodgateService, ProblemBody, RateLimit, RateLimitException, SkipRateLimit, type FloodgateModuleOptions } from '../src';
import type { Platform } from './harness';

const PLATFORMS: Platform[] = ['express', 'fastify'];
let redis: RedisServer;
const apps: INestApplication[] = [];
const prefix = () => `nest${Math.random().toString(36).slice(2, 10)}`;

beforeAll(async () => {
  redis = await startRedis();
});
afterEach(async () => {
  for (const app of apps.splice(0)) {
    (app.getHttpServer() as Server).closeAllConnections();
    await app.close();
  }
});
afterAll(async () => {
  await redis?.stop();
});

/** Starts `module` on the platform, on loopback; returns a fetch for its paths. */
async function serve(module: object, platform: Platform, setup?: (app: INestApplication) => void) {
  const adapter = platform === 'express' ? new ExpressAdapter() : new FastifyAdapter();
  const app = await NestFactory.create(module as never, adapter, { logger: false, abortOnError: false });
  apps.push(app);
  setup?.(app);
  await app.listen(0, '127.0.0.1');
  const { port } = (app.getHttpServer() as Server).address() as AddressInfo;
  return (path: string, init?: RequestInit) => fetch(`http://127.0.0.1:${port}${path}`, init);
}

@Controller('users')
class UsersController {
  @Get(':id')
  findOne(@Param('id') id: string) {
    return { id };
  }

  @Post()
  @RateLimit({ limit: 1, cost: 1 })
  create() {
    return { created: true };
  }

  @Get()
  @SkipRateLimit()
  list() {
    return [];
  }
}

describe.each(PLATFORMS)('a Nest app on %s', (platform) => {
  it('answers 200, 200, 429 with RateLimit headers, Retry-After and the problem+json body, on a real Redis', async () => {
    const client = redis.client({ autoResendUnfulfilledCommands: false });
    @Module({
      // A store deadline no busy machine misses: these check the answers, not the default 100 ms (a run saw the first call go past it: fail-local, no quota headers).
      imports: [FloodgateModule.forRoot({ store: new RedisStore({ client, timeoutMs: 30_000 }), prefix: prefix(), limit: 2, windowMs: '1m', algorithm: 'fixed-window', retryAfterJitterMs: 0 })],
      controllers: [UsersController],
      providers: [{ provide: APP_GUARD, useClass: FloodgateGuard }],
    })
    class AppModule {}
    const get = await serve(AppModule, platform);
    try {
      const replies = [];
      for (const id of [1, 2, 3]) {
        const res = await get(`/users/${id}`);
        replies.push({ status: res.status, headers: Object.fromEntries(res.headers), body: await res.text() });
      }
      console.log(`nest on ${platform}: GET /users/1, /users/2, /users/3 ->\n${replies.map((r) => `${r.status} ${JSON.stringify(r.headers)}\n${r.body}`).join('\n')}`);
      expect(replies.map((r) => r.status)).toEqual([200, 200, 429]);
      const [first, second, denied] = replies;
      expect([first.headers['ratelimit-limit'], first.headers['ratelimit-remaining']]).toEqual(['2', '1']);
      expect([second.headers['ratelimit-limit'], second.headers['ratelimit-remaining']]).toEqual(['2', '0']);
      expect(first.headers['retry-after']).toBeUndefined();
      const reset = Number(denied.headers['ratelimit-reset']);
      expect(reset).toBeGreaterThanOrEqual(1);
      expect(reset).toBeLessThanOrEqual(60);
      expect(denied.headers['ratelimit-remaining']).toBe('0');
      // Never earlier than the reset (no jitter here: exactly it).
      expect(Number(denied.headers['retry-after'])).toBe(reset);
      expect(denied.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(Number(denied.headers['content-length'])).toBe(Buffer.byteLength(denied.body));
      expect(JSON.parse(denied.body)).toEqual({
        type: QUOTA_EXCEEDED_TYPE,
        title: 'Quota Exceeded',
        status: 429,
        detail: `Too many requests: retry in ${reset} seconds.`,
        'violated-policies': ['default'],
      });
      // One bucket for the route pattern, one for another route; the skipped route sends no headers.
      const other = await get('/users', { method: 'POST' });
      expect([other.status, other.headers.get('ratelimit-limit'), other.headers.get('ratelimit-remaining')]).toEqual([201, '1', '0']);
      expect((await get('/users', { method: 'POST' })).status).toBe(429);
      const skipped = await get('/users');
      expect([skipped.status, skipped.headers.get('ratelimit-limit')]).toEqual([200, null]);
    } finally {
      client.disconnect();
    }
  });

  it('builds the Redis client in forRootAsync from an injected config provider (imports, inject, useFactory)', async () => {
    const clients: Redis[] = [];
    @Injectable()
    class AppConfig {
      readonly redisUrl = redis.url;
      readonly limit = 1;
    }
    @Module({ providers: [AppConfig], exports: [AppConfig] })
    class ConfigModule {}
    @Module({
      imports: [
        FloodgateModule.forRootAsync({
          imports: [ConfigModule],
          inject: [AppConfig],
          useFactory: (config: AppConfig): FloodgateModuleOptions => {
            const client = new Redis(config.redisUrl, { autoResendUnfulfilledCommands: false });
            clients.push(client);
            return { store: new RedisStore({ client, timeoutMs: 30_000 }), prefix: prefix(), limit: config.limit, windowMs: '1m' };
          },
        }),
      ],
      controllers: [UsersController],
      providers: [{ provide: APP_GUARD, useClass: FloodgateGuard }],
    })
    class AppModule {}
    const get = await serve(AppModule, platform);
    try {
      expect((await get('/users/1')).status).toBe(200);
      expect((await get('/users/2')).status).toBe(429);
      expect(clients).toHaveLength(1);
      // Counted in that Redis: its script ran.
      expect((await redis.commandStats()).evalsha).toBeGreaterThanOrEqual(1);
    } finally {
      clients.forEach((c) => c.disconnect());
    }
  });

  it('keys buckets on the global prefix + controller path + method path, merges controller and handler options, and skips by either', async () => {
    const scopes: string[] = [];
    @Controller('orgs/:org/reports')
    @RateLimit({ limit: 5, cost: 2 })
    class ReportsController {
      @Get(':id')
      one() {
        return {};
      }
      @Post()
      @RateLimit({ cost: 5 })
      create() {
        return {};
      }
    }
    @Controller('internal')
    @SkipRateLimit()
    class InternalController {
      @Get('health')
      health() {
        return {};
      }
      @Get('audit')
      @RateLimit()
      audit() {
        return {};
      }
    }
    @Module({
      imports: [FloodgateModule.forRoot({ store: new MemoryStore(), limit: 100, onDecision: (e: RateLimitEvent) => void scopes.push(`${e.scope} cost ${e.cost}`) })],
      controllers: [ReportsController, InternalController],
      providers: [{ provide: APP_GUARD, useClass: FloodgateGuard }],
    })
    class AppModule {}
    const get = await serve(AppModule, platform, (app) => app.setGlobalPrefix('api'));
    const first = await get('/api/orgs/acme/reports/7');
    expect([first.status, first.headers.get('ratelimit-limit'), first.headers.get('ratelimit-remaining')]).toEqual([200, '5', '3']);
    await get('/api/orgs/other/reports/8?x=1');
    expect((await get('/api/orgs/acme/reports', { method: 'POST' })).headers.get('ratelimit-remaining')).toBe('0');
    expect((await get('/api/internal/health')).headers.get('ratelimit-limit')).toBeNull();
    expect((await get('/api/internal/audit')).headers.get('ratelimit-limit')).toBe('100');
    expect(scopes).toEqual([
      'GET /api/orgs/:org/reports/:id cost 2',
      'GET /api/orgs/:org/reports/:id cost 2',
      'POST /api/orgs/:org/reports cost 5',
      'GET /api/internal/audit cost 1',
    ]);
  });

  it("merges controller and handler options by core's rule: a handler's calendar window replaces its controller's windowMs (no FG_INVALID_OPTION)", async () => {
    @Controller('calendar')
    @RateLimit({ windowMs: '1m', limit: 5 })
    class CalendarController {
      @Get('daily')
      @RateLimit({ window: { every: 'day' }, limit: 2 })
      daily() {
        return {};
      }
      @Get('minute')
      minute() {
        return {};
      }
    }
    @Module({
      imports: [FloodgateModule.forRoot({ store: new MemoryStore(), limit: 100 })],
      controllers: [CalendarController],
      providers: [{ provide: APP_GUARD, useClass: FloodgateGuard }],
    })
    class AppModule {}
    const get = await serve(AppModule, platform);
    const daily = [await get('/calendar/daily'), await get('/calendar/daily'), await get('/calendar/daily')];
    expect(daily.map((r) => [r.status, r.headers.get('ratelimit-limit')])).toEqual([
      [200, '2'],
      [200, '2'],
      [429, '2'],
    ]);
    // The controller's own windowMs still holds for its other handlers.
    const minute = await get('/calendar/minute');
    expect([minute.status, minute.headers.get('ratelimit-limit')]).toEqual([200, '5']);
  });

  it('hands a 429 to the exception filters users register, before Floodgate renders it; interceptors never run for it', async () => {
    const seen: { status: number; decision: string | undefined; type: unknown }[] = [];
    const intercepted: string[] = [];
    @Catch(HttpException)
    class ErrorsFilter implements ExceptionFilter {
      catch(exception: HttpException, host: ArgumentsHost) {
        const floodgate = exception instanceof RateLimitException ? exception : undefined;
        const body = exception.getResponse() as Record<string, unknown>;
        seen.push({ status: exception.getStatus(), decision: floodgate?.decision?.reason, type: body.type });
        const res = host.switchToHttp().getResponse();
        // The app's own error format; Floodgate's headers are already on the response.
        const send = platform === 'express' ? res.status(exception.getStatus()) : res.code(exception.getStatus());
        send.header('content-type', 'application/json').send(JSON.stringify({ error: 'slow down', problem: body }));
      }
    }
    @Injectable()
    class Tracing implements NestInterceptor {
      intercept(_context: unknown, next: CallHandler) {
        intercepted.push('handler');
        return next.handle();
      }
    }
    @Controller('r')
    @UseInterceptors(Tracing)
    class R {
      @Get()
      r() {
        return { ok: true };
      }
    }
    @Module({
      imports: [FloodgateModule.forRoot({ store: new MemoryStore(), limit: 1, retryAfterJitterMs: 0 })],
      controllers: [R],
      providers: [
        { provide: APP_GUARD, useClass: FloodgateGuard },
        { provide: APP_FILTER, useClass: ErrorsFilter },
      ],
    })
    class AppModule {}
    const get = await serve(AppModule, platform);
    expect((await get('/r')).status).toBe(200);
    const denied = await get('/r');
    expect(denied.status).toBe(429);
    expect(Number(denied.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(denied.headers.get('ratelimit-remaining')).toBe('0');
    const body = (await denied.json()) as { problem: Record<string, unknown> };
    expect(body).toMatchObject({ error: 'slow down', problem: { type: QUOTA_EXCEEDED_TYPE, status: 429, title: 'Quota Exceeded' } });
    expect(Object.keys(body.problem)).toEqual(['type', 'title', 'status', 'detail', 'violated-policies']);
    expect(seen).toEqual([{ status: 429, decision: 'limited', type: QUOTA_EXCEEDED_TYPE }]);
    expect(intercepted).toEqual(['handler']); // the admitted request only
  });

  it('throws its 429 without a stack trace, and a filter that re-sends getResponse() sends the problem', async () => {
    const stacks: (string | undefined)[] = [];
    const bodies: string[] = [];
    @Catch(RateLimitException)
    class Resend implements ExceptionFilter {
      catch(exception: RateLimitException, host: ArgumentsHost) {
        stacks.push(exception.stack);
        const response = exception.getResponse();
        bodies.push(response instanceof ProblemBody ? 'ProblemBody' : Object.getPrototypeOf(response) === Object.prototype ? 'plain object' : typeof response);
        const res = host.switchToHttp().getResponse();
        // The problem as a filter that only logs and passes it on would send it.
        if (platform === 'express') res.status(exception.getStatus()).json(exception.getResponse());
        else res.code(exception.getStatus()).send(exception.getResponse());
      }
    }
    @Controller('s')
    class S {
      @Get()
      s() {
        return { ok: true };
      }
    }
    @Module({
      imports: [FloodgateModule.forRoot({ store: new MemoryStore(), limit: 1, retryAfterJitterMs: 0 })],
      controllers: [S],
      providers: [
        { provide: APP_GUARD, useClass: FloodgateGuard },
        { provide: APP_FILTER, useClass: Resend },
      ],
    })
    class AppModule {}
    const get = await serve(AppModule, platform);
    expect((await get('/s')).status).toBe(200);
    const denied = await get('/s');
    expect(denied.status).toBe(429);
    const problem = (await denied.json()) as Record<string, unknown>;
    expect(Object.keys(problem)).toEqual(['type', 'title', 'status', 'detail', 'violated-policies']);
    expect(problem).toMatchObject({ type: QUOTA_EXCEEDED_TYPE, status: 429 });
    // A denial is an answer, not a fault: its stack is its first line, no frames.
    expect(stacks).toEqual([`RateLimitException: ${String(problem.detail)}`]);
    // docs/adapters.md: on Express a ProblemBody (Nest's Express adapter resets the type of an object
    // error body, so a filter's res.json sends JSON); on Fastify the plain problem, its type already
    // on the reply, which a filter's own send keeps.
    expect(bodies).toEqual([platform === 'express' ? 'ProblemBody' : 'plain object']);
    expect(denied.headers.get('content-type')).toMatch(platform === 'express' ? /^application\/json/ : /^application\/problem\+json/);
  });

  it('counts a request once when the guard is both global and on the controller', async () => {
    @Controller('twice')
    @UseGuards(FloodgateGuard)
    class Twice {
      @Get()
      get() {
        return {};
      }
    }
    @Module({
      imports: [FloodgateModule.forRoot({ store: new MemoryStore(), limit: 5 })],
      controllers: [Twice],
      providers: [{ provide: APP_GUARD, useClass: FloodgateGuard }],
    })
    class AppModule {}
    const get = await serve(AppModule, platform);
    expect((await get('/twice')).headers.get('ratelimit-remaining')).toBe('4');
    expect((await get('/twice')).headers.get('ratelimit-remaining')).toBe('3');
  });

  it('fails the app at start, not at its first request, for a bad @RateLimit() value, naming the handler', async () => {
    @Controller('bad')
    class Bad {
      @Get()
      @RateLimit({ cost: -1 })
      get() {
        return {};
      }
    }
    @Module({ imports: [FloodgateModule.forRoot({ store: new MemoryStore() })], controllers: [Bad], providers: [{ provide: APP_GUARD, useClass: FloodgateGuard }] })
    class AppModule {}
    const app = await NestFactory.create(AppModule, platform === 'express' ? new ExpressAdapter() : new FastifyAdapter(), { logger: false, abortOnError: false });
    apps.push(app);
    await expect(app.init()).rejects.toMatchObject({ code: 'FG_INVALID_OPTION', option: 'cost', message: expect.stringMatching(/^@RateLimit\(\) on Bad.get: Invalid option `cost`: got -1/) });
  });

  it('exposes the health snapshot through FloodgateService', async () => {
    @Controller('h')
    class H {
      constructor(@Inject(FloodgateService) private readonly floodgate: FloodgateService) {}
      @Get()
      @SkipRateLimit()
      health() {
        return this.floodgate.health();
      }
    }
    @Module({ imports: [FloodgateModule.forRoot({ store: new MemoryStore() })], controllers: [H] })
    class AppModule {}
    const get = await serve(AppModule, platform);
    expect(await (await get('/h')).json()).toMatchObject({ healthy: true });
  });
});
