// Tests for the delay proxy: a reply is held until its delay has run, then passed on byte for byte and in order, against a real redis-server.
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { pollUntil, startDelayProxy, startRedis, type DelayProxy, type RedisServer } from './index';

describe('startDelayProxy', () => {
  let redis: RedisServer;
  const proxies: DelayProxy[] = [];
  const clients: Redis[] = [];
  const through = (proxy: DelayProxy): Redis => {
    const client = redis.client({ port: proxy.port });
    clients.push(client);
    return client;
  };

  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    clients.forEach((c) => c.disconnect());
    await Promise.all(proxies.map((p) => p.stop()));
    await redis.stop();
  });

  it('holds each reply for the delay it was given, then passes it on', async () => {
    // The test's own schedule: a reply leaves only when the test releases it.
    const pending: { release: () => void; delayMs: number }[] = [];
    const proxy = await startDelayProxy({ targetPort: redis.port, delayMs: 150, schedule: (release, delayMs) => void pending.push({ release, delayMs }) });
    proxies.push(proxy);
    const client = through(proxy);
    // ioredis's connect handshake (INFO) is itself a reply held by the proxy: release replies as they come until ready.
    const ready = new Promise((resolve) => client.once('ready', resolve));
    const releaser = setInterval(() => pending.splice(0).forEach((p) => p.release()), 5);
    await ready;
    clearInterval(releaser);
    pending.splice(0).forEach((p) => p.release());

    const direct = redis.client();
    clients.push(direct);
    await direct.set('held', 'value');
    let answer: string | null | undefined;
    const get = client.get('held').then((v) => (answer = v));
    await pollUntil(async () => (pending.length > 0 ? true : undefined), { timeoutMs: 10_000, what: 'the server reply to reach the proxy' });
    // The server has answered; the client has not seen it: it is held, for the delay asked.
    expect(pending.map((p) => p.delayMs)).toEqual([150]);
    await direct.ping(); // a full round trip elsewhere: time for a reply that was not held to arrive
    expect(answer).toBeUndefined();
    expect(proxy.toClients).toBeLessThan(proxy.fromServer);
    pending.shift()!.release();
    await get;
    expect(answer).toBe('value');
    expect(proxy.toClients).toBe(proxy.fromServer);
  });

  it('passes replies intact and in order with a real delay (large binary values, pipelined)', async () => {
    const proxy = await startDelayProxy({ targetPort: redis.port, delayMs: 20 });
    proxies.push(proxy);
    const client = through(proxy);
    const direct = redis.client();
    clients.push(direct);
    const values = Array.from({ length: 5 }, (_, i) => randomBytes(i === 0 ? 1 << 18 : 1000 * (i + 1)));
    for (const [i, v] of values.entries()) await direct.set(`bin-${i}`, v);
    const answers = await Promise.all(values.map((_, i) => client.getBuffer(`bin-${i}`)));
    answers.forEach((a, i) => expect(a!.equals(values[i])).toBe(true));
    expect(proxy.toClients).toBe(proxy.fromServer);
  });
});
