// Type tests for @floodgate/fastify, checked by types.test.ts with tsc: each @ts-expect-error line must be an error.
import Fastify, { type FastifyContextConfig } from 'fastify';
import rateLimit, { rateLimit as named, type Decision, type RouteRateLimitConfig } from '../src';

export async function main(): Promise<void> {
  const app = Fastify();
  await app.register(rateLimit, { limit: 10, windowMs: '1m', hook: 'preHandler', headers: 'draft-10', failMode: 'local' });
  await app.register(named, { key: (request) => request.headers['x-user'] as string | undefined });
  app.get('/a', { config: { rateLimit: { cost: 5, group: 'reports', hook: 'onRequest' } } }, async (request) => {
    const decision: Decision | undefined = request.rateLimit;
    return decision?.remaining;
  });
  app.get('/b', { config: { rateLimit: false } }, async () => 'free');
  app.get('/c', { config: { rateLimit: { cost: (request) => (request.headers['x-heavy'] ? 10 : 1) } } }, async () => 'ok');
  const config: RouteRateLimitConfig = { limits: [{ name: 'burst', limit: 5, windowMs: 1000 }] };
  app.get('/d', { config: { rateLimit: config } }, async () => 'ok');

  // The augmented FastifyContextConfig types config.rateLimit. (Route shorthands infer `config` from
  // the literal, so inside them check it with `satisfies RouteRateLimitConfig`.)
  // @ts-expect-error config.rateLimit is options or false
  const yes: FastifyContextConfig = { rateLimit: true };
  // @ts-expect-error unknown option in a route's config
  const typo: FastifyContextConfig = { rateLimit: { costs: 5 } };
  // @ts-expect-error the same check inside a route shorthand
  app.get('/f', { config: { rateLimit: { costs: 5 } satisfies RouteRateLimitConfig } }, async () => [typo, yes]);
  // @ts-expect-error the hook is one Floodgate can run in
  await app.register(rateLimit, { hook: 'onSend' });
  // @ts-expect-error request.rateLimit is a Decision
  app.get('/g', async (request) => request.rateLimit.toFixed());
}
