// respondDirectly unset on Nest's Express platform: a 429 no exception filter of the app would see is written straight to Node, byte for byte what Nest's reply path sends; a filter anywhere still gets it.
import { request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ArgumentsHost, Catch, Controller, Get, Module, UseFilters, type ExceptionFilter, type INestApplication, type Type } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { MemoryStore } from '@floodgate/core';
import { FloodgateGuard, FloodgateModule, RateLimit, RateLimitException, type FloodgateModuleOptions } from '../src';

const apps: INestApplication[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) {
    (app.getHttpServer() as Server).closeAllConnections();
    await app.close();
  }
});

/** Statuses of the responses Nest's own reply path (HttpAdapter.reply) sent. */
function counting<T extends new (...args: any[]) => { reply(...args: unknown[]): unknown }>(Base: T) {
  return class extends Base {
    replied: number[] = [];
    reply(...args: unknown[]) {
      this.replied.push((args[2] as number | undefined) ?? 200); // an admitted answer: its status set before, none given here
      return super.reply(...args);
    }
  };
}
const CountingExpress = counting(ExpressAdapter as never);
const CountingFastify = counting(FastifyAdapter as never);

interface Raw {
  status: number;
  /** Name/value pairs as they came on the wire, Date left out, the time left as '#' (two apps' 429s a few ms apart). */
  head: string[];
  body: string;
}
const TIME_LEFT = ['Floodgate-Reset-Ms', 'RateLimit-Reset', 'Retry-After'];
function get(port: number, path: string): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers: { connection: 'close' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => {
        const head: string[] = [];
        for (let i = 0; i < res.rawHeaders.length; i += 2) {
          const name = res.rawHeaders[i];
          if (name !== 'Date') head.push(name, TIME_LEFT.includes(name) ? '#' : res.rawHeaders[i + 1]);
        }
        resolve({ status: res.statusCode!, head, body: body.replace(/\d+ seconds?/, '# seconds') });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

@Catch(RateLimitException)
class Shaped implements ExceptionFilter {
  static seen: boolean[] = [];
  catch(exception: RateLimitException, host: ArgumentsHost) {
    Shaped.seen.push(exception.responded);
    const res = host.switchToHttp().getResponse();
    res.status(exception.getStatus()).json({ error: 'slow down' });
  }
}

@Controller('plain')
class Plain {
  @Get()
  get() {
    return { ok: true };
  }
}
@Controller('own')
class Own {
  @Get()
  @RateLimit({ respondDirectly: false })
  get() {
    return { ok: true };
  }
}
@Controller('on-handler')
class OnHandler {
  @Get()
  @UseFilters(Shaped)
  get() {
    return { ok: true };
  }
}
@Controller('on-controller')
@UseFilters(Shaped)
class OnController {
  @Get()
  get() {
    return { ok: true };
  }
}

async function start(options: FloodgateModuleOptions, platform: 'express' | 'fastify' = 'express', providers: object[] = [], setup?: (app: INestApplication) => void) {
  @Module({
    imports: [FloodgateModule.forRoot({ store: new MemoryStore(), limit: 1, retryAfterJitterMs: 0, ...options })],
    controllers: [Plain, Own, OnHandler, OnController],
    providers: [{ provide: APP_GUARD, useClass: FloodgateGuard }, ...(providers as never[])],
  })
  class AppModule {}
  const adapter = platform === 'express' ? new (CountingExpress as Type<ExpressAdapter & { replied: number[] }>)() : new (CountingFastify as Type<FastifyAdapter & { replied: number[] }>)();
  const app = await NestFactory.create(AppModule, adapter, { logger: false, abortOnError: false });
  apps.push(app);
  setup?.(app);
  await app.listen(0, '127.0.0.1');
  const { port } = (app.getHttpServer() as Server).address() as AddressInfo;
  return { adapter, send: (path: string) => get(port, path) };
}

/** The second request of a route with limit 1, after its first was admitted. */
async function denied(send: (path: string) => Promise<Raw>, path: string): Promise<Raw> {
  expect((await send(path)).status).toBe(200);
  return send(path);
}

beforeEach(() => {
  Shaped.seen = [];
});

describe('respondDirectly unset, on the Express platform', () => {
  it('writes a 429 no filter would see straight to Node: the same status, headers (names, case, order) and body as Nest\'s reply path', async () => {
    const unset = await start({});
    const viaNest = await start({ respondDirectly: false });
    const direct = await denied(unset.send, '/plain');
    const replied = await denied(viaNest.send, '/plain');
    expect(direct.status).toBe(429);
    expect(direct).toEqual(replied);
    expect(direct.head).toContain('application/problem+json');
    // Nest's reply path sent the admitted 200s on both, and the 429 only where respondDirectly is false.
    expect(unset.adapter.replied).toEqual([200]);
    expect(viaNest.adapter.replied).toEqual([200, 429]);
  });

  it('hands the 429 to a filter wherever the app has one: useGlobalFilters, APP_FILTER, @UseFilters on the handler or its controller', async () => {
    const global = await start({}, 'express', [], (app) => app.useGlobalFilters(new Shaped()));
    expect(JSON.parse((await denied(global.send, '/plain')).body)).toEqual({ error: 'slow down' });
    const provided = await start({}, 'express', [{ provide: APP_FILTER, useClass: Shaped }]);
    expect(JSON.parse((await denied(provided.send, '/plain')).body)).toEqual({ error: 'slow down' });
    const local = await start({});
    expect(JSON.parse((await denied(local.send, '/on-handler')).body)).toEqual({ error: 'slow down' });
    expect(JSON.parse((await denied(local.send, '/on-controller')).body)).toEqual({ error: 'slow down' });
    // Each filter got the exception before anything was written.
    expect(Shaped.seen).toEqual([false, false, false, false]);
    // A route without a filter of its own in the same app is written straight to Node.
    const plain = await denied(local.send, '/plain');
    expect(plain.status).toBe(429);
    expect(local.adapter.replied.filter((s) => s === 429)).toEqual([]);
  });

  it('keeps Nest\'s reply path for a route whose @RateLimit() says respondDirectly: false', async () => {
    const { adapter, send } = await start({});
    expect((await denied(send, '/own')).status).toBe(429);
    expect(adapter.replied).toEqual([200, 429]);
  });
});

it('on the Fastify platform, a 429 still goes through Nest\'s reply path', async () => {
  const { adapter, send } = await start({}, 'fastify');
  const answer = await denied(send, '/plain');
  expect(answer.status).toBe(429);
  expect(adapter.replied).toEqual([200, 429]);
});
