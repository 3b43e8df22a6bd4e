// Identity as the HTTP adapters have it, on the three real servers: a verified API key gets its own budget, an invented one its IP's; X-Forwarded-For only through trusted proxies.
import { MemoryStore } from '@floodgate/core';
import { post, startServer, type Running, type ServerName } from './harness';

const servers: ServerName[] = ['yoga', 'apollo', 'mercurius'];
const Q = '{ items(first: 4) { id } }';
const remaining = async (s: Running, headers: Record<string, string>) => (await post(s.url, Q, { ...headers, 'x-floodgate-dry-run': '1' })).body.extensions?.cost?.throttleStatus?.currentlyAvailable;

describe.each(servers)('%s', (name) => {
  let server: Running | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('keys a verified API key on its own bucket and an invented one on the IP', async () => {
    const resolveKey = async (key: string) => (key === 'good-key' ? { account: 'acme' } : null);
    const s = (server = await startServer(name, { store: new MemoryStore(), limit: 100, windowMs: '1m', resolveKey }, 4));
    await post(s.url, Q, { 'x-api-key': 'good-key' });
    await post(s.url, Q, { 'x-api-key': 'invented-1' });
    await post(s.url, Q, { 'x-api-key': 'invented-2' });
    // The invented keys both drew from the IP's bucket (8 of 100); the verified key from its own (4).
    expect(await remaining(s, { 'x-api-key': 'good-key' })).toBe(96);
    expect(await remaining(s, {})).toBe(92);
    expect(await remaining(s, { 'x-api-key': 'invented-3' })).toBe(92);
  });

  it('reads X-Forwarded-For only from a trusted proxy', async () => {
    // Untrusted: the header is ignored, every caller is the loopback peer.
    const plain = (server = await startServer(name, { store: new MemoryStore(), limit: 100, windowMs: '1m' }, 4));
    await post(plain.url, Q, { 'x-forwarded-for': '203.0.113.1' });
    expect(await remaining(plain, { 'x-forwarded-for': '203.0.113.2' })).toBe(96);
    await plain.close();
    // Trusted (Yoga and Apollo: trustProxy; Mercurius: Fastify's own trustProxy): one bucket per forwarded client.
    const trusted = (server = await startServer(name, { store: new MemoryStore(), limit: 100, windowMs: '1m', ...(name === 'mercurius' ? {} : { trustProxy: ['127.0.0.1'] }) }, 4, name === 'mercurius' ? '127.0.0.1' : undefined));
    await post(trusted.url, Q, { 'x-forwarded-for': '203.0.113.1' });
    expect(await remaining(trusted, { 'x-forwarded-for': '203.0.113.2' })).toBe(100);
    expect(await remaining(trusted, { 'x-forwarded-for': '203.0.113.1' })).toBe(96);
  });
});
