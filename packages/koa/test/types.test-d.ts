// Type tests for @floodgate/koa, checked by types.test.ts with tsc: each @ts-expect-error line must be an error.
import Router from '@koa/router';
import Koa from 'koa';
import { rateLimit, type Decision, type RateLimitOptions } from '../src';

const app = new Koa();
const router = new Router();
const limiter = rateLimit({ limit: 100, headers: 'legacy' });
app.use(limiter);
router.post('/login', rateLimit({ limit: 5, windowMs: 60_000, failMode: 'closed' }), (ctx) => {
  const decision: Decision | undefined = ctx.state.rateLimit;
  ctx.body = { remaining: decision?.remaining };
});
router.get('/health', limiter.route(false), (ctx) => {
  ctx.body = 'ok';
});
router.get('/reports', limiter.route({ cost: (ctx) => (ctx.query.full ? 10 : 1), key: (ctx) => ctx.get('x-user') || undefined }));
app.use(router.routes());
const options: RateLimitOptions = { shadow: true, onDecision: (event) => void event.decision.reason };
rateLimit(options);

// @ts-expect-error limits are objects with a whole-number limit
rateLimit({ limits: [{ limit: '5' }] });
// @ts-expect-error failMode is 'open' | 'closed' | 'local'
rateLimit({ failMode: 'fail' });
// @ts-expect-error shadow is a boolean
rateLimit({ shadow: 'yes' });
// @ts-expect-error group is a string
rateLimit({ group: 42 });
