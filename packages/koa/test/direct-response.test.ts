// Koa: the blocked caller's 429 is written straight to Node; upstream middleware still sees ctx.status 429.
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { runDirectResponseSuite } from '../../core/test/direct-response';
import { rateLimit } from '../src';

runDirectResponseSuite({
  name: 'koa',
  async start(options) {
    const statuses: number[] = [];
    const limiter = rateLimit(options);
    const app = new Koa();
    app.use(async (ctx, next) => {
      ctx.set('X-Before', 'yes');
      await next();
      statuses.push(ctx.status);
      ctx.set('X-After', 'yes'); // a no-op once the headers are sent
    });
    app.use(limiter);
    app.use(async (ctx) => {
      ctx.body = 'ok';
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', resolve));
    return {
      port: (server.address() as AddressInfo).port,
      statuses,
      close: () => new Promise<void>((resolve) => server.close(() => resolve())),
    };
  },
});
