// Requests that match no route: Nest answers them 404 before any guard runs, so the platform's own hook limits them in one bucket.
import type { AbstractHttpAdapter } from '@nestjs/core';
import type { FloodgateService } from './floodgate-service';
import type { PlatformRequest, PlatformResponse } from './platform';

type Done = (error?: unknown) => void;

/**
 * Express: a middleware after every route and before Nest's 404 handler (FloodgateModule's
 * onModuleInit runs between the two), so only a request no route took reaches it. Fastify: an
 * onRequest hook that acts on the 404 route only. Either way a denial goes to Nest's exception
 * filters like a guard's.
 */
export function limitUnmatched(adapter: AbstractHttpAdapter, floodgate: FloodgateService): void {
  const decide = (req: PlatformRequest, res: PlatformResponse, done: Done) => {
    try {
      const answer = floodgate.decide(floodgate.http, req, res, undefined);
      if (answer === true) done();
      else answer.then(() => done(), done);
    } catch (error) {
      done(error);
    }
  };
  const type = adapter.getType();
  const instance = adapter.getInstance() as {
    use?(fn: (req: PlatformRequest, res: PlatformResponse, next: Done) => void): void;
    addHook?(name: 'onRequest', fn: (request: PlatformRequest & { is404?: boolean }, reply: PlatformResponse, done: Done) => void): void;
  };
  if (type === 'express' && instance.use) instance.use(decide);
  else if (type === 'fastify' && instance.addHook) instance.addHook('onRequest', (request, reply, done) => (request.is404 ? decide(request, reply, done) : done()));
}
