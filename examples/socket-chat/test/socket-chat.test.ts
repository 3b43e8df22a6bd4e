// The socket-chat example against a real redis-server: ws and Socket.IO chats, 20 messages per 10 s per caller over every connection, a 4th connection refused.
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { startRedis, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import { io as ioClient } from 'socket.io-client';
import WebSocket from 'ws';
import { createChat, MESSAGES, OPEN, type Chat } from '../src/app';

let redis: RedisServer;
let client: Redis;
const chats: Chat[] = [];
const sockets: { close(): void }[] = [];

beforeAll(async () => {
  redis = await startRedis();
  client = redis.client({ autoResendUnfulfilledCommands: false });
});
afterAll(async () => {
  for (const s of sockets) s.close();
  await Promise.all(chats.map((c) => c.close()));
  client?.disconnect();
  await redis?.stop();
});

async function chat(): Promise<number> {
  const chat = createChat({ redis: client, prefix: `ex-${randomUUID().slice(0, 8)}` });
  chats.push(chat);
  const server = chat.server;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

function openWs(port: number): Promise<WebSocket | number> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`);
    ws.once('open', () => (sockets.push(ws), resolve(ws)));
    ws.once('unexpected-response', (_req, res) => (resolve(res.statusCode ?? 0), ws.terminate()));
    // terminate() before the upgrade completed reports an error: the status is the answer here.
    ws.on('error', () => undefined);
  });
}

it('ws: two connections of one caller share 20 messages; the rest are answered with the retry time; a 4th connection gets 429', async () => {
  const port = await chat();
  const [a, b] = [(await openWs(port)) as WebSocket, (await openWs(port)) as WebSocket];
  const frames: string[] = [];
  const all = new Promise<void>((resolve) =>
    a.on('message', (data) => {
      frames.push(String(data));
      // a sees every broadcast chat line (from a and b) and its own refusals: 20 chats + 5 refusals.
      if (frames.length === MESSAGES + 5) resolve();
    }),
  );
  for (let i = 0; i < 10; i++) b.send(`b${i}`);
  for (let i = 0; i < 15; i++) a.send(`a${i}`);
  await all;
  expect(frames.filter((f) => JSON.parse(f).type === 'chat')).toHaveLength(MESSAGES);
  const refused = frames.map((f) => JSON.parse(f)).filter((f) => f.type === 'rate-limited');
  expect(refused).toHaveLength(5);
  expect(refused[0].retryAfterMs).toBeGreaterThan(0);
  expect(await openWs(port)).toBeInstanceOf(WebSocket);
  expect(await openWs(port)).toBe(429);
  expect(OPEN).toBe(3);
});

it('Socket.IO: an image costs 5 of a connection\'s 10; acks carry the refusal and its retry time', async () => {
  const port = await chat();
  const socket = ioClient(`http://127.0.0.1:${port}`, { transports: ['websocket'], reconnection: false });
  sockets.push(socket);
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  const answers = [];
  for (let i = 0; i < 3; i++) answers.push(await socket.emitWithAck('image', i));
  expect(answers[0]).toEqual({ ok: true });
  expect(answers[1]).toEqual({ ok: true });
  expect(answers[2]).toMatchObject({ type: 'rate-limited', limit: 'connection' });
  expect(answers[2].retryAfterMs).toBeGreaterThan(0);
});
