// The express-api example's /metrics and /healthz on a real redis-server: decisions, fail-open and the breaker gauge move when Redis is killed.
import { randomUUID } from 'node:crypto';
import { startRedis, waitFor, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import request from 'supertest';
import { createApp } from '../src/app';

let server: RedisServer;
let redis: Redis;

beforeAll(async () => {
  server = await startRedis();
  redis = server.client({ autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 1, retryStrategy: () => 50 });
  redis.on('error', () => {});
});
afterAll(async () => {
  redis?.disconnect();
  await server?.stop();
});

/** The scrape's samples as 'name{labels}' → value (labels as the exporter writes them). */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const cut = line.lastIndexOf(' ');
    out.set(line.slice(0, cut), Number(line.slice(cut + 1)));
  }
  return out;
}

/** The sum of every sample of `name` whose labels contain all of `labels`. */
function total(scrape: Map<string, number>, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const [series, value] of scrape) {
    if (!series.startsWith(`${name}{`) && series !== name) continue;
    if (Object.entries(labels).every(([k, v]) => series.includes(`${k}="${v}"`))) sum += value;
  }
  return sum;
}

describe('express-api /metrics and /healthz', () => {
  it('shows decisions, then fail-local (the default: this instance\'s share) and the breaker open while Redis is down', async () => {
    // A deadline a loaded CI machine keeps: every healthy decision must be Redis's own ('allowed'),
    // and one call past the default 100 ms (the first one loads the script) would be decided locally.
    const app = createApp({ redis, redisTimeoutMs: 2_000, prefix: `exm-${randomUUID().slice(0, 8)}`, logger: { warn: () => {}, error: () => {} }, breaker: { failureThreshold: 3, coolDownMs: 60_000 } });
    const scrape = async () => samples((await request(app).get('/metrics').expect(200)).text);

    const before = await scrape();
    expect(total(before, 'floodgate_decisions_total')).toBe(0);
    expect(total(before, 'floodgate_breaker_state', { floodgate_breaker_state: 'closed' })).toBe(1);

    for (let i = 0; i < 12; i++) await request(app).get('/widgets').set('x-api-key', 'demo').expect(200);
    const healthy = await scrape();
    expect(total(healthy, 'floodgate_decisions_total', { floodgate_outcome: 'allowed', floodgate_reason: 'allowed', floodgate_scope: 'GET /widgets' })).toBe(12);
    expect(total(healthy, 'floodgate_key_lookup_calls_total')).toBe(1);
    expect((await request(app).get('/healthz')).status).toBe(200);

    // The fleet count is believed once a second announcement confirms it (issue 49): until then an
    // instance's local share is 1 unit per subject. Wait for it, as an instance up a while has it.
    await waitFor('the fleet count confirmed', async () => total(await scrape(), 'floodgate_instances', { floodgate_instances_source: 'learned' }) === 1, 30_000);
    await server.kill();
    await waitFor('the client sees Redis gone', () => redis.status !== 'ready');
    // The default failMode 'local': this instance's share of 100 (one instance learned), so all 8 are admitted.
    for (let i = 0; i < 8; i++) await request(app).get('/widgets').set('x-api-key', 'demo').expect(200);
    const down = await scrape();
    expect(total(down, 'floodgate_decisions_total', { floodgate_outcome: 'degraded', floodgate_reason: 'fail-local' })).toBe(8);
    // The count the share is cut for, learned through Redis before it went (one process: 1).
    expect(total(down, 'floodgate_instances')).toBe(1);
    expect(total(down, 'floodgate_decisions_total', { floodgate_outcome: 'allowed' })).toBe(12);
    expect(total(down, 'floodgate_breaker_state', { floodgate_breaker_state: 'open' })).toBe(1);
    expect(total(down, 'floodgate_breaker_state', { floodgate_breaker_state: 'closed' })).toBe(0);
    expect(total(down, 'floodgate_store_errors_total', { error_type: 'connection' })).toBe(3);
    expect(total(down, 'floodgate_breaker_transitions_total', { floodgate_breaker_state: 'open' })).toBe(1);
    const health = await request(app).get('/healthz');
    expect(health.status).toBe(503);
    expect(health.body).toMatchObject({ healthy: false, stores: [{ store: 'redis', status: 'down', breaker: 'open', lastError: { kind: 'connection' } }], decisions: { allowed: 12, degraded: 8 } });
    // A public route: the store's state and error kind, never the client's or Redis's own words.
    expect(health.body.stores[0].lastError).not.toHaveProperty('message');
    expect(health.text).not.toMatch(/Connection is closed|ECONNREFUSED|127\.0\.0\.1/);
    await server.restart();
  });
});
