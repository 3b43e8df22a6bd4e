// Failure modes through @floodgate/fastify: fail-open, fail-closed and local routes on one app while Redis is killed, paused and restarted.
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { runFaultScenarios, type FaultAppSpec } from '../../core/test/failure-http';
import { rateLimit } from '../src';

runFaultScenarios('fastify 5 (plugin, per-route config.rateLimit)', async (spec: FaultAppSpec) => {
  const app = Fastify();
  await app.register(rateLimit, spec.options);
  for (const route of spec.routes) {
    app.route({
      method: route.method,
      url: route.path,
      config: { rateLimit: route.options },
      handler: async (request) => ({ reason: request.rateLimit?.reason ?? null }),
    });
  }
  await app.listen({ port: 0, host: '127.0.0.1' });
  return {
    port: (app.server.address() as AddressInfo).port,
    // closeAllConnections: keep-alive sockets of the load would otherwise hold close() open.
    close: async () => {
      app.server.closeAllConnections();
      await app.close();
    },
  };
});
