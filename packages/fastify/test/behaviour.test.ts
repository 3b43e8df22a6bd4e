// The shared behaviour table through @floodgate/fastify (plugin + per-route config), on memory and Redis.
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { parseList } from 'structured-headers';
import { behaviourStores, runBehaviourTable, type AppSpec, type TestApp } from '../../core/test/http-behaviour';
import { rateLimit } from '../src';

async function build(spec: AppSpec): Promise<TestApp> {
  const app = Fastify();
  await app.register(rateLimit, spec.options);
  for (const route of spec.routes) {
    app.route({
      method: route.method,
      url: route.path,
      config: route.options === undefined ? {} : { rateLimit: route.options },
      handler: async (request) => ({
        route: route.path,
        remaining: request.rateLimit?.remaining ?? null,
        reason: request.rateLimit?.reason ?? null,
      }),
    });
  }
  // A real listening server: inject (light-my-request) loads an ESM-only cookie module Jest cannot require on Node 20.
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  return {
    async request(method, url, headers = {}) {
      const res = await fetch(`http://127.0.0.1:${port}${url}`, { method, headers });
      return { status: res.status, headers: Object.fromEntries(res.headers), body: await res.text() };
    },
    close: () => app.close(),
  };
}

const stores = behaviourStores();

for (const [storeName, store] of Object.entries(stores)) {
  runBehaviourTable({
    name: `fastify 5 on ${storeName}`,
    build,
    store,
    limitsUnmatched: true,
    parseList: (value) => parseList(value) as unknown as [unknown, Map<string, unknown>][],
  });
}
