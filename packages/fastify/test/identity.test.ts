// Identity through Fastify 5: trustProxy, /64 rotation, IPv4-mapped addresses, cheap rejections in Redis; and the attack suite.
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { runAttackSuite } from '../../core/test/attack-http';
import { runIdentitySuite, type IdentityHarness } from '../../core/test/identity-http';
import { rateLimit } from '../src';

const harness: IdentityHarness = {
  name: 'fastify 5',
  async start(options, trustProxy) {
    // Fastify's own setting decides whether X-Forwarded-For is read: trust a proxy on loopback, or none.
    const app = Fastify({ trustProxy: trustProxy ? '127.0.0.1' : false });
    await app.register(rateLimit, options);
    app.get('/r', async () => 'ok');
    await app.listen({ port: 0, host: '127.0.0.1' });
    return { port: (app.server.address() as AddressInfo).port, close: () => app.close() };
  },
};
runIdentitySuite(harness);
runAttackSuite(harness);
