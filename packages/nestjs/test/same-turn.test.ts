// On the memory store FloodgateGuard answers synchronously (a boolean, no promise): it adds no turn to the path Nest's guards take.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { Controller, Get, Injectable, Module, Req, type CanActivate, type Type } from '@nestjs/common';
import { APP_GUARD, NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { MemoryStore } from '@floodgate/core';
import { FloodgateGuard, FloodgateModule } from '../src';
import type { Platform } from './harness';

/**
 * Counts microtask hops from when a middleware saw the request to when the handler runs: a chain
 * of microtasks, each one hop. Nest awaits its guards (GuardsConsumer.tryActivate is an async
 * function), so no guard reaches the handler in the request's turn; what is compared is how many
 * hops each guard adds.
 */
function hopCounter(): { hops: number } {
  const counter = { hops: 0 };
  const hop = () => {
    if (counter.hops++ < 1000) queueMicrotask(hop);
  };
  queueMicrotask(hop);
  return counter;
}

@Injectable()
class AllowGuard implements CanActivate {
  canActivate() {
    return true;
  }
}
@Injectable()
class AsyncAllowGuard implements CanActivate {
  async canActivate() {
    return true;
  }
}

@Controller()
class Hops {
  @Get()
  get(@Req() req: { counter?: { hops: number }; raw?: { counter: { hops: number } } }) {
    // Fastify's middleware (middie) gets Node's request, which Fastify's request keeps as raw.
    return { hops: (req.counter ?? req.raw!.counter).hops };
  }
}

async function hopsWith(platform: Platform, guard: Type<CanActivate>): Promise<number> {
  @Module({ imports: [FloodgateModule.forRoot({ store: new MemoryStore(), limit: 1000 })], controllers: [Hops], providers: [{ provide: APP_GUARD, useClass: guard }] })
  class AppModule {}
  const app = await NestFactory.create(AppModule, platform === 'express' ? new ExpressAdapter() : new FastifyAdapter(), { logger: false, abortOnError: false });
  app.use((req: { counter?: { hops: number } }, _res: unknown, next: () => void) => {
    req.counter = hopCounter();
    next();
  });
  await app.listen(0, '127.0.0.1');
  try {
    const { port } = (app.getHttpServer() as Server).address() as AddressInfo;
    const res = await fetch(`http://127.0.0.1:${port}/`);
    expect(res.status).toBe(200);
    if (guard === FloodgateGuard) expect(res.headers.get('ratelimit-remaining')).toBe('999');
    return ((await res.json()) as { hops: number }).hops;
  } finally {
    await app.close();
  }
}

it.each(['express', 'fastify'] as Platform[])('on %s, FloodgateGuard on the memory store takes exactly the hops of a guard that returns true', async (platform) => {
  const plain = await hopsWith(platform, AllowGuard);
  const floodgate = await hopsWith(platform, FloodgateGuard);
  const promised = await hopsWith(platform, AsyncAllowGuard);
  console.log(`same-turn | nest on ${platform} | microtask hops before the handler: guard returning true ${plain}, FloodgateGuard ${floodgate}, async guard ${promised}`);
  expect(floodgate).toBe(plain);
  // The count can tell a guard that waits: an async guard takes more.
  expect(promised).toBeGreaterThan(plain);
});
