// Fastify: the blocked caller's 429 is written straight to Node; onSend hooks are skipped, onResponse still runs.
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { runDirectResponseSuite } from '../../core/test/direct-response';
import { rateLimit } from '../src';

runDirectResponseSuite({
  name: 'fastify 5',
  async start(options) {
    const statuses: number[] = [];
    const app = Fastify();
    try {
      app.addHook('onRequest', (_request, reply, done) => {
        reply.header('X-Before', 'yes');
        done();
      });
      app.addHook('onSend', async (_request, reply, payload) => {
        reply.header('X-After', 'yes');
        return payload;
      });
      app.addHook('onResponse', async (_request, reply) => {
        statuses.push(reply.statusCode);
      });
      await app.register(rateLimit, options);
      app.get('/r', async () => 'ok');
      await app.listen({ port: 0, host: '127.0.0.1' });
    } catch (error) {
      await app.close();
      throw error;
    }
    return { port: (app.server.address() as AddressInfo).port, statuses, close: () => app.close() };
  },
});
