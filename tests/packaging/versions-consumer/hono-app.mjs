// A Hono app as a newcomer writes it on @hono/node-server, memory store, no getConnInfo: three requests to its 429, the answers and any Floodgate warning printed as JSON.
import { readFileSync } from 'node:fs';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { rateLimit } from '@floodgate/hono';

const warnings = [];
const app = new Hono();
app.use(rateLimit({ limit: 2, windowMs: '1m', logger: { warn: (m) => void warnings.push(m), error: (m) => void warnings.push(m) } }));
app.get('/users/:id', (c) => c.json({ ok: true }));

const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, async ({ port }) => {
  const seen = [];
  for (const id of [1, 2, 3]) {
    const res = await fetch(`http://127.0.0.1:${port}/users/${id}`);
    seen.push({ status: res.status, limit: res.headers.get('ratelimit-limit'), remaining: res.headers.get('ratelimit-remaining'), retryAfter: res.headers.get('retry-after'), body: await res.text() });
  }
  // hono exports no ./package.json: read the installed file.
  const hono = JSON.parse(readFileSync(new URL('node_modules/hono/package.json', import.meta.url), 'utf8')).version;
  process.stdout.write(`${JSON.stringify({ hono, node: process.version, seen, warnings })}\n`);
  server.close();
});
