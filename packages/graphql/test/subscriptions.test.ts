// Subscriptions on real servers (Yoga over server-sent events, Mercurius over a WebSocket), MemoryStore and a real Redis: the first event settles the reservation, each later event is charged its own cost, and one that does not fit arrives as the THROTTLED error instead of its data.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MemoryStore, RedisStore, type Store } from '@floodgate/core';
import { startRedis, type RedisServer } from '@floodgate/testing';
import Fastify from 'fastify';
import mercurius from 'mercurius';
import WebSocket from 'ws';
import { createSchema, createYoga } from 'graphql-yoga';
import type { Redis } from 'ioredis';
import { floodgateMercurius, useFloodgate } from '../src';

let redis: RedisServer;
let client: Redis;
beforeAll(async () => {
  redis = await startRedis();
  client = redis.client({ autoResendUnfulfilledCommands: false });
  await client.ping();
});
afterAll(async () => {
  client.disconnect();
  await redis.stop();
});

const typeDefs = `
type Tick { n: Int! }
type Query { ok: Boolean }
type Subscription { ticks(count: Int!): Tick }
`;

interface Payload {
  data?: { ticks: { n: number } } | null;
  errors?: { extensions?: { code?: string } }[];
  extensions?: { cost?: { actualQueryCost: number | null; throttleStatus: { currentlyAvailable: number } | null } };
}

function ticking(counter: { published: number }) {
  return {
    Query: { ok: () => true },
    Subscription: {
      ticks: {
        async *subscribe(_: unknown, { count: n }: { count: number }) {
          for (let i = 1; i <= n; i++) {
            counter.published++;
            yield { ticks: { n: i } };
          }
        },
      },
    },
  };
}

/** Mercurius over graphql-transport-ws: every payload of one subscription, until it completes. */
async function subscribeMercurius(store: Store, limit: number, count: number): Promise<{ payloads: Payload[]; published: number }> {
  const counter = { published: 0 };
  const app = Fastify();
  // cache: false: Mercurius's query cache loads quick-lru with a dynamic import(), which Jest's CommonJS runtime cannot run.
  await app.register(mercurius, { schema: typeDefs, resolvers: ticking(counter) as never, subscription: true, cache: false });
  floodgateMercurius(app as never, { store, prefix: `msub${Math.random().toString(36).slice(2, 10)}`, limit, windowMs: '1m' });
  await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    const ws = new WebSocket(`ws://127.0.0.1:${(app.server.address() as AddressInfo).port}/graphql`, 'graphql-transport-ws');
    const payloads: Payload[] = [];
    await new Promise<void>((resolve, reject) => {
      ws.on('error', reject);
      ws.on('open', () => ws.send(JSON.stringify({ type: 'connection_init' })));
      ws.on('message', (raw) => {
        const message = JSON.parse(String(raw)) as { type: string; payload?: Payload };
        if (message.type === 'connection_ack') ws.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: `subscription { ticks(count: ${count}) { n } }` } }));
        else if (message.type === 'next') payloads.push(message.payload!);
        else if (message.type === 'complete') resolve();
        else if (message.type === 'error') reject(new Error(JSON.stringify(message)));
      });
    });
    ws.close();
    return { payloads, published: counter.published };
  } finally {
    await app.close();
  }
}

async function subscribe(store: Store, limit: number, count: number): Promise<{ payloads: Payload[]; published: number }> {
  const counter = { published: 0 };
  const resolvers = ticking(counter);
  const yoga = createYoga({ schema: createSchema({ typeDefs, resolvers }), logging: false, plugins: [useFloodgate({ store, prefix: `sub${Math.random().toString(36).slice(2, 10)}`, limit, windowMs: '1m' })] });
  const server = createServer(yoga);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`;
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/event-stream' }, body: JSON.stringify({ query: `subscription { ticks(count: ${count}) { n } }` }) });
    // The stream ends when the generator does: every event is in the text.
    const text = await res.text();
    const payloads = text
      .split('\n')
      .filter((line) => line.startsWith('data: ') && line.length > 'data: '.length)
      .map((line) => JSON.parse(line.slice('data: '.length)) as Payload);
    return { payloads, published: counter.published };
  } finally {
    await new Promise<void>((r) => server.close(() => r()));
  }
}

describe.each<[string, () => Store]>([
  ['memory', () => new MemoryStore()],
  ['redis', () => new RedisStore({ client, timeoutMs: 5_000 })],
])('on %s', (_name, makeStore) => {
  it.each([
    ['yoga', subscribe],
    ['mercurius', subscribeMercurius],
  ])('%s charges each event its cost (1 each): 5 events fit a limit of 5, the next 3 arrive as THROTTLED', async (_server, run) => {
    const { payloads, published } = await run(makeStore(), 5, 8);
    expect(published).toBe(8);
    expect(payloads).toHaveLength(8);
    expect(payloads.slice(0, 5).map((p) => p.data?.ticks.n)).toEqual([1, 2, 3, 4, 5]);
    expect(payloads.slice(0, 5).map((p) => p.extensions?.cost?.throttleStatus?.currentlyAvailable)).toEqual([4, 3, 2, 1, 0]);
    expect(payloads.slice(5).map((p) => [p.data ?? null, p.errors?.[0].extensions?.code])).toEqual([
      [null, 'THROTTLED'],
      [null, 'THROTTLED'],
      [null, 'THROTTLED'],
    ]);
  });
});
