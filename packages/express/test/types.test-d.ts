// Type tests for @floodgate/express, checked by types.test.ts with tsc: each @ts-expect-error line must be an error.
import express, { type Request } from 'express';
import { rateLimit, type Decision, type RateLimitEvent, type RateLimitOptions } from '../src';

const app = express();
const limiter = rateLimit({ limit: 100, windowMs: '1m', headers: ['draft-6', 'draft-10'], failMode: 'closed', retryAfterJitterMs: 0 });
app.use(limiter);
app.post('/reports', rateLimit({ cost: 10 }), (req, res) => {
  const decision: Decision | undefined = req.rateLimit;
  res.json({ remaining: decision?.remaining });
});
app.get('/search', limiter.route({ group: 'search', cost: (req) => (req.query.deep ? 5 : 1), key: (req) => req.get('x-user') }));
app.get('/health', limiter.route(false));
const options: RateLimitOptions = {
  limits: [{ name: 'burst', limit: 10, windowMs: 1000 }, { name: 'hourly', limit: 1000, windowMs: '1h' }],
  shadow: true,
  onLimited: (event: RateLimitEvent<Request>) => void event.request.ip,
  handler: (_req, event) => ({ retryInMs: event.decision.retryAfterMs }),
};
rateLimit(options);

// @ts-expect-error not a header dialect
rateLimit({ headers: 'draft-7' });
// @ts-expect-error cost is a number or a function of the request
rateLimit({ cost: '10' });
// @ts-expect-error failMode is 'open' | 'closed' | 'local'
rateLimit({ failMode: 'sometimes' });
// @ts-expect-error key returns a string, a number or undefined
rateLimit({ key: (req: Request) => ({ ip: req.ip }) });
// @ts-expect-error windowMs is ms or a duration string such as '1m'
rateLimit({ windowMs: '1 minute' });
// @ts-expect-error route() takes options or false
limiter.route(true);
// @ts-expect-error req.rateLimit is a Decision, not a number
export const remaining: number = ({} as Request).rateLimit;
