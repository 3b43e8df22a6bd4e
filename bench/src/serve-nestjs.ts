// The NestJS servers of the bench: one controller on the Express or the Fastify platform, the limiter as the app's global guard.
import 'reflect-metadata';
import type { Redis } from 'ioredis';
import type { AddressInfo } from 'node:net';
import { nestLimiter } from './limiters';
import { BODY, type Started } from './serve-common';
import type { ServerSpec } from './types';

export type NestPlatform = 'express' | 'fastify';

/**
 * A Nest app with one GET route per mount. A Nest app has one set of global guards, so one
 * limiter per app: a mount list with several limiters (the race section's) is refused.
 */
export async function serveNest(platform: NestPlatform, spec: ServerSpec, redis: Redis | undefined): Promise<Started> {
  const { Controller, Get, Module } = await import('@nestjs/common');
  const { NestFactory } = await import('@nestjs/core');
  const limiting = spec.mounts.filter((m) => m.limiter.kind !== 'none');
  if (limiting.length > 1) throw new Error(`nestjs-${platform}: one limiter per app (its global guard), got ${limiting.length}`);
  const limiter = limiting[0] ? nestLimiter(limiting[0].limiter, redis) : undefined;

  // Decorators applied as functions: the bench is compiled by esbuild, which emits no design-type
  // metadata, and this controller needs none (no constructor injection, no parameter decorators).
  class BenchController {
    ok(): string {
      return BODY;
    }
  }
  const controllers = spec.mounts.map(({ path }, i) => {
    const named = { [`Bench${i}Controller`]: class extends BenchController {} }[`Bench${i}Controller`];
    Controller(path)(named);
    Get()(named.prototype, 'ok', Object.getOwnPropertyDescriptor(BenchController.prototype, 'ok')!);
    return named;
  });
  class BenchModule {}
  Module({ imports: limiter?.imports ?? [], controllers, providers: limiter?.providers ?? [] })(BenchModule);

  // Many-caller runs: the platform trusts the loopback proxy, as the other frameworks' servers do.
  let adapter;
  if (platform === 'express') {
    adapter = new (await import('@nestjs/platform-express')).ExpressAdapter();
    if (spec.trustProxy) adapter.set('trust proxy', 'loopback');
  } else {
    adapter = new (await import('@nestjs/platform-fastify')).FastifyAdapter({ logger: false, ...(spec.trustProxy ? { trustProxy: '127.0.0.1' } : {}) });
  }
  const app = await NestFactory.create(BenchModule, adapter, { logger: false, abortOnError: false });
  await app.listen(0, '127.0.0.1');
  const address = app.getHttpServer().address() as AddressInfo;
  return { port: address.port, wiring: limiter?.wiring ?? 'n/a', close: () => app.close() };
}
