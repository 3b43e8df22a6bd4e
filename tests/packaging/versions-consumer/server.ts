// A newcomer's own file under the quickstart's tsconfig: reads process.env and imports nothing typed by Node (Hono on the memory store, the client).
import { Hono } from 'hono';
import { rateLimit } from '@floodgate/hono';
import { pacedFetch } from '@floodgate/client';

const app = new Hono();
app.use(rateLimit({ limit: Number(process.env.LIMIT ?? 100), windowMs: '1m' }));
app.get('/', (c) => c.text('ok'));

export const paced = pacedFetch(globalThis.fetch, { maxWaitMs: 10_000 });
export default app;
