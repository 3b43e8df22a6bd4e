// A Worker with no framework: core's fetch-style entry (rateLimitFetch) guarding a plain fetch handler, keyed on CF-Connecting-IP.
import { rateLimitFetch } from '@floodgate/core';

const limiter = rateLimitFetch({ limit: 3, windowMs: '1m', ip: (request) => request.headers.get('cf-connecting-ip') ?? undefined });

export default {
  fetch: limiter.wrap(() => new Response('ok')),
};
