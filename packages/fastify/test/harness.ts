// The Fastify harness every shared adapter suite drives (@floodgate/adapter-suites): the plugin with per-route config.rateLimit.
import type { AddressInfo } from 'node:net';
import { Agent } from 'node:http';
import { askedDelay, askedStatus, settleAsked, type AdapterHarness, type AppSpec, type RunningApp } from '@floodgate/adapter-suites';
import Fastify, { type FastifyInstance } from 'fastify';
import { rateLimit } from '../src';

export const fastifyHarness: AdapterHarness = {
  name: 'fastify 5',
  // One plugin on the app, a route's options in its config: Fastify has no other mounting.
  mountings: ['app-level'],
  async start(spec: AppSpec): Promise<RunningApp> {
    if ((spec.mounting ?? 'app-level') !== 'app-level') throw new Error(`fastify harness: no ${spec.mounting} mounting`);
    const statuses: number[] = [];
    // Fastify's own setting decides whether X-Forwarded-For is read: trust a proxy on loopback, or none.
    const app = Fastify({ trustProxy: spec.trustProxy === 'all' ? true : spec.trustProxy ? '127.0.0.1' : false });
    try {
      if (spec.sendPathMarkers) {
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
      }
      // jsonBody: the limiter runs after Fastify's own body parser, so that extraKeys can read request.body.
      const options = { ...spec.options, ...spec.groupOptions };
      await app.register(rateLimit, spec.jsonBody ? { ...options, hook: 'preHandler' } : options);
      for (const route of spec.routes) {
        app.route({
          method: route.method === 'ALL' ? app.supportedMethods : route.method, // ALL: what app.all() registers
          url: route.path,
          config: route.options === undefined ? {} : { rateLimit: route.options },
          handler: async (request, reply) => {
            if (spec.delayFromHeader) await askedDelay(spec, request.headers);
            const extra = await settleAsked(spec, request.headers, request.floodgate);
            reply.code(askedStatus(spec, request.headers));
            return { route: route.path, remaining: request.rateLimit?.remaining ?? null, reason: request.rateLimit?.reason ?? null, ...extra };
          },
        });
      }
      if (spec.usage) app.get(spec.usage.path, app.rateLimitUsage([...spec.usage.routes]));
      await app.listen({ port: 0, host: '127.0.0.1' });
    } catch (error) {
      await app.close();
      throw error;
    }
    return {
      port: (app.server.address() as AddressInfo).port,
      statuses,
      // closeAllConnections: keep-alive sockets of a load would otherwise hold close() open.
      close: async () => {
        app.server.closeAllConnections();
        await app.close();
      },
    };
  },
};

/**
 * For tests that build their own apps: `listen` starts one on a free loopback port, and every app
 * listened on is closed after each test (open connections first); one keep-alive agent for the
 * tests of the file or describe block it is called in, destroyed after them.
 */
export function listenedApps(): { readonly agent: Agent; listen(app: FastifyInstance): Promise<number> } {
  const agent = new Agent({ keepAlive: true });
  let apps: FastifyInstance[] = [];
  afterEach(async () => {
    for (const app of apps) {
      app.server.closeAllConnections();
      await app.close();
    }
    apps = [];
  });
  afterAll(() => agent.destroy());
  return {
    agent,
    async listen(app) {
      apps.push(app);
      await app.listen({ port: 0, host: '127.0.0.1' });
      return (app.server.address() as AddressInfo).port;
    },
  };
}
