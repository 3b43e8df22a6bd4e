// Identity through Koa 3 with @koa/router: app.proxy, /64 rotation, IPv4-mapped addresses, cheap rejections in Redis; and the attack suite.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Router from '@koa/router';
import Koa from 'koa';
import { runAttackSuite } from '../../core/test/attack-http';
import { runIdentitySuite, type IdentityHarness } from '../../core/test/identity-http';
import { rateLimit } from '../src';

const harness: IdentityHarness = {
  name: 'koa 3',
  async start(options, trustProxy) {
    const app = new Koa();
    // Koa's own setting decides whether X-Forwarded-For is read.
    app.proxy = trustProxy;
    const router = new Router();
    router.get('/r', (ctx) => {
      ctx.body = 'ok';
    });
    app.use(rateLimit(options));
    app.use(router.routes());
    const server = createServer(app.callback());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return {
      port: (server.address() as AddressInfo).port,
      close: () =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    };
  },
};
runIdentitySuite(harness);
runAttackSuite(harness);
