// Type tests for @floodgate/hono, checked by types.test.ts with tsc: each @ts-expect-error line must be an error.
import { getConnInfo } from '@hono/node-server/conninfo';
import { Hono, type Context } from 'hono';
import { rateLimit, type Decision, type RateLimitOptions } from '../src';

const app = new Hono();
const limiter = rateLimit({ limit: 100, headers: 'legacy', getConnInfo, trustProxy: ['10.0.0.0/8'] });
app.use(limiter);
app.post('/login', rateLimit({ limit: 5, windowMs: 60_000, failMode: 'closed' }), (c) => {
  const decision: Decision | undefined = c.get('rateLimit');
  return c.json({ remaining: decision?.remaining, viaVar: c.var.rateLimit?.remaining });
});
app.get('/health', limiter.route(false), (c) => c.text('ok'));
app.get('/reports', limiter.route({ cost: (c) => (c.req.query('full') ? 10 : 1), key: (c) => c.req.header('x-user') }), (c) => c.text('ok'));
// An app with Bindings and Variables of its own takes the middleware as it is.
const typed = new Hono<{ Bindings: { TOKEN: string }; Variables: { user: string } }>();
typed.use(limiter);
typed.get('/me', (c) => c.json({ user: c.get('user'), remaining: c.get('rateLimit')?.remaining }));
const options: RateLimitOptions = { shadow: true, onDecision: (event) => void event.decision.reason, handler: (c: Context) => c.json({ slow: true }) };
rateLimit(options);

// @ts-expect-error limits are objects with a whole-number limit
rateLimit({ limits: [{ limit: '5' }] });
// @ts-expect-error failMode is 'open' | 'closed' | 'local'
rateLimit({ failMode: 'fail' });
// @ts-expect-error trustProxy is a list of addresses and ranges
rateLimit({ trustProxy: true });
// @ts-expect-error getConnInfo is a function of the context
rateLimit({ getConnInfo: 'node' });
// @ts-expect-error route() takes options or false
limiter.route(true);
// @ts-expect-error the decision is a Decision, not a number
export const remaining: number = ({} as Context).get('rateLimit');
