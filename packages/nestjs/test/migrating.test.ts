// docs/migrating.md's @nestjs/throttler pairs on one real redis-server: the throttler app (Redis storage from @nest-lab/throttler-storage-redis) and the Floodgate app admit the same requests.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { Controller, Get, Module, type INestApplication } from '@nestjs/common';
import { APP_GUARD, NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { ThrottlerGuard, ThrottlerModule, SkipThrottle as PeerSkipThrottle, Throttle as PeerThrottle } from '@nestjs/throttler';
import { ThrottlerStorageRedisService } from '@nest-lab/throttler-storage-redis';
import { RedisStore } from '@floodgate/core';
import { startRedis, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import { FloodgateGuard, FloodgateModule, RateLimit, SkipRateLimit } from '../src';

const LIMIT = 100;
const SENT = LIMIT + 15;

let server: RedisServer;
let client: Redis;
const apps: INestApplication[] = [];
beforeAll(async () => {
  server = await startRedis();
  client = server.client({ autoResendUnfulfilledCommands: false });
});
afterEach(async () => {
  for (const app of apps.splice(0)) {
    (app.getHttpServer() as Server).closeAllConnections();
    await app.close();
  }
});
afterAll(async () => {
  client?.disconnect();
  await server?.stop();
});

const fresh = (name: string) => `${name}-${Math.random().toString(36).slice(2, 10)}`;

async function serve(module: object) {
  const app = await NestFactory.create(module as never, new ExpressAdapter(), { logger: false, abortOnError: false });
  apps.push(app);
  await app.listen(0, '127.0.0.1');
  return `http://127.0.0.1:${((app.getHttpServer() as Server).address() as AddressInfo).port}`;
}

/** `count` GETs one after another; how many were admitted and refused. */
async function tally(url: string, count: number) {
  const out = { admitted: 0, refused: 0 };
  for (let i = 0; i < count; i++) {
    const { status } = await fetch(url);
    if (status === 200) out.admitted++;
    else if (status === 429) out.refused++;
  }
  return out;
}

// The controllers of the guide, before and after: a default route, a stricter one, an exempt one.
@Controller()
class Before {
  @Get('feed')
  feed() {
    return {};
  }
  @Get('login')
  @PeerThrottle({ default: { limit: 3, ttl: 60_000 } })
  login() {
    return {};
  }
  @Get('health')
  @PeerSkipThrottle()
  health() {
    return {};
  }
}
@Controller()
class After {
  @Get('feed')
  feed() {
    return {};
  }
  @Get('login')
  @RateLimit({ limit: 3, windowMs: '1m' })
  login() {
    return {};
  }
  @Get('health')
  @SkipRateLimit()
  health() {
    return {};
  }
}

it('ThrottlerModule.forRoot({ throttlers, storage }) + ThrottlerGuard and FloodgateModule.forRoot({ limit, windowMs, store }) + FloodgateGuard admit the same requests', async () => {
  @Module({
    imports: [ThrottlerModule.forRoot({ throttlers: [{ ttl: 60_000, limit: LIMIT }], storage: new ThrottlerStorageRedisService(client) })],
    controllers: [Before],
    providers: [{ provide: APP_GUARD, useClass: ThrottlerGuard }],
  })
  class BeforeModule {}
  @Module({
    imports: [FloodgateModule.forRoot({ limit: LIMIT, windowMs: '1m', algorithm: 'fixed-window', store: new RedisStore({ client, timeoutMs: 30_000 }), prefix: fresh('after') })],
    controllers: [After],
    providers: [{ provide: APP_GUARD, useClass: FloodgateGuard }],
  })
  class AfterModule {}
  const before = await serve(BeforeModule);
  const after = await serve(AfterModule);
  const pairs = {
    feed: [await tally(`${before}/feed`, SENT), await tally(`${after}/feed`, SENT)],
    login: [await tally(`${before}/login`, 5), await tally(`${after}/login`, 5)],
    health: [await tally(`${before}/health`, SENT), await tally(`${after}/health`, SENT)],
  };
  console.log(`migrating | @nestjs/throttler -> @floodgate/nestjs | ${JSON.stringify(pairs)}`);
  expect(pairs.feed).toEqual([{ admitted: LIMIT, refused: 15 }, { admitted: LIMIT, refused: 15 }]);
  expect(pairs.login).toEqual([{ admitted: 3, refused: 2 }, { admitted: 3, refused: 2 }]);
  expect(pairs.health).toEqual([{ admitted: SENT, refused: 0 }, { admitted: SENT, refused: 0 }]);
  // Both kept their counts in the one redis-server.
  expect((await client.dbsize()) > 0).toBe(true);
  // 470 requests one after another through two Nest apps: 43 s at load 30 on 2 cores, past Jest's 30 s.
}, 180_000);
