// On the memory store a decision needs no waiting: the hook calls done() in the same turn (no
// promise in between), which is what keeps an admitted request as cheap as the bare route.
import Fastify, { type FastifyRequest } from 'fastify';
import { MemoryStore } from '@floodgate/core';
import { expectServedInOneTurn, turnMarker } from '@floodgate/adapter-suites';
import { rateLimit } from '../src';

type Marked = FastifyRequest & { marker?: { sync: boolean } };

it.each([
  ['with no limiter (the control: Fastify itself stays in one turn)', false],
  ['with the plugin on the memory store', true],
])('an admitted request reaches its handler in the same turn %s', async (_name, limited) => {
  const app = Fastify({ logger: false });
  app.addHook('onRequest', (req: Marked, _reply, done) => {
    req.marker = turnMarker();
    done();
  });
  if (limited) await app.register(rateLimit, { store: new MemoryStore(), limit: 2, windowMs: 60_000 });
  // A callback-style handler: an async one would itself end the turn.
  app.get('/', (req: Marked, reply) => void reply.send({ sync: req.marker!.sync }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    await expectServedInOneTurn((app.server.address() as { port: number }).port, limited);
  } finally {
    await app.close();
  }
});
