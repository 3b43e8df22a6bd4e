// FloodgateGuard on a NestJS gateway on the ws platform (@nestjs/platform-ws, Nest 11) against real ws clients: the handshake is the upgrade request the gateway keeps on the client, else the socket's address.
import 'reflect-metadata';
import { EventEmitter } from 'node:events';
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Module, UseGuards, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { SubscribeMessage, WebSocketGateway, type OnGatewayConnection } from '@nestjs/websockets';
import { WsAdapter } from '@nestjs/platform-ws';
import { WebSocket } from 'ws';
import { MemoryStore } from '@floodgate/core';
import { FloodgateGuard, FloodgateModule, RateLimit } from '@floodgate/nestjs';

/** What the gateway saw: 'handled' per message its handler ran, 'refused' per exception Nest's filter emitted on the server's client (the ws platform sends it nowhere). */
const seen = new EventEmitter();
let keepRequest = true;

@WebSocketGateway({ path: '/ws' })
@UseGuards(FloodgateGuard)
class WsChatGateway implements OnGatewayConnection {
  handleConnection(client: WebSocket & { request?: IncomingMessage }, request: IncomingMessage): void {
    // The ws platform hands the upgrade request to this hook only: kept on the client, the guard reads its headers.
    if (keepRequest) client.request = request;
    client.on('exception', (error: unknown) => seen.emit('refused', error));
  }

  @SubscribeMessage('limited')
  @RateLimit({ limit: 3 })
  limited(): { event: string; data: number } {
    seen.emit('handled');
    return { event: 'ok', data: 1 };
  }
}

async function start(): Promise<{ app: INestApplication; url: string }> {
  @Module({
    imports: [FloodgateModule.forRoot({ store: new MemoryStore(), limit: 100, windowMs: '1m', resolveKey: (key: string) => (key.startsWith('k') ? { account: key } : null) })],
    providers: [WsChatGateway],
  })
  class AppModule {}
  const app = await NestFactory.create(AppModule, { logger: ['error'], abortOnError: false });
  app.useWebSocketAdapter(new WsAdapter(app));
  await app.listen(0, '127.0.0.1');
  return { app, url: `ws://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}/ws` };
}

const clients: WebSocket[] = [];
async function connect(url: string, headers: Record<string, string> = {}): Promise<WebSocket> {
  const ws = new WebSocket(url, { headers });
  clients.push(ws);
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  return ws;
}

/** Sends `n` messages; resolves once the gateway handled or refused each (counted on its events, not on time). */
async function send(ws: WebSocket, n: number): Promise<{ handled: number; refused: { statusCode: number; retryAfterMs: number }[] }> {
  const result = { handled: 0, refused: [] as { statusCode: number; retryAfterMs: number }[] };
  const onHandled = () => result.handled++;
  const onRefused = (error: { statusCode: number; retryAfterMs: number }) => result.refused.push(error);
  seen.on('handled', onHandled).on('refused', onRefused);
  await new Promise<void>((resolve) => {
    const check = () => result.handled + result.refused.length >= n && resolve();
    seen.on('handled', check).on('refused', check);
    for (let i = 0; i < n; i++) ws.send(JSON.stringify({ event: 'limited', data: {} }));
  });
  seen.removeAllListeners();
  return result;
}

let app: INestApplication | undefined;
afterEach(async () => {
  for (const ws of clients.splice(0)) ws.close();
  await app?.close();
  app = undefined;
  keepRequest = true;
});

it('the upgrade request kept on the client: 5 messages, 3 handled and 2 refused with retryAfterMs; API keys have separate buckets', async () => {
  const started = await start();
  app = started.app;
  const alice = await connect(started.url, { 'x-api-key': 'k-alice' });
  const first = await send(alice, 5);
  expect({ handled: first.handled, refused: first.refused.map((r) => r.statusCode) }).toEqual({ handled: 3, refused: [429, 429] });
  for (const r of first.refused) expect(r.retryAfterMs).toBeGreaterThan(0);
  const bob = await connect(started.url, { 'x-api-key': 'k-bob' });
  expect((await send(bob, 4)).handled).toBe(3);
});

it('without the request: the socket address is the identity, and a spoofed X-Forwarded-For buys nothing', async () => {
  keepRequest = false;
  const started = await start();
  app = started.app;
  const first = await connect(started.url, { 'x-forwarded-for': '203.0.113.1' });
  expect((await send(first, 3)).handled).toBe(3);
  const second = await connect(started.url, { 'x-forwarded-for': '203.0.113.2' });
  expect(await send(second, 1)).toMatchObject({ handled: 0, refused: [{ statusCode: 429 }] });
});
