// FloodgateGuard on a NestJS WebSocket gateway (Nest 11, Socket.IO platform) against real Socket.IO clients, on MemoryStore and a real Redis: @RateLimit() per @SubscribeMessage handler, @SkipRateLimit(), identity from the handshake.
import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import { Module, UseGuards, type INestApplication } from '@nestjs/common';
import { APP_GUARD, NestFactory } from '@nestjs/core';
import { SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';
import * as wsConstants from '@nestjs/websockets/constants';
import { GATEWAY_METADATA, MESSAGE_MAPPING_METADATA, MESSAGE_METADATA } from '../../../packages/nestjs/src/nest-metadata';
import { io, type Socket } from 'socket.io-client';
import { MemoryStore, RedisStore, type Store } from '@floodgate/core';
import { startRedis, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import { FloodgateGuard, FloodgateModule, RateLimit, SkipRateLimit } from '@floodgate/nestjs';

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

const calls = { limited: 0, free: 0, plain: 0 };

/** Nest applies no global guard (APP_GUARD, useGlobalGuards) to gateways: @UseGuards() on the gateway. */
@WebSocketGateway()
@UseGuards(FloodgateGuard)
class ChatGateway {
  @SubscribeMessage('limited')
  @RateLimit({ limit: 3 })
  limited(): string {
    calls.limited++;
    return 'ok';
  }

  @SubscribeMessage('free')
  @SkipRateLimit()
  free(): string {
    calls.free++;
    return 'ok';
  }

  /** The module's limit (2): a bucket of its own, not the 'limited' handler's. */
  @SubscribeMessage('plain')
  plain(): string {
    calls.plain++;
    return 'ok';
  }
}

/** The guard on the gateway and on its handler: each message must still count once. */
@WebSocketGateway()
@UseGuards(FloodgateGuard)
class GuardedTwiceGateway {
  @SubscribeMessage('twice')
  @UseGuards(FloodgateGuard)
  @RateLimit({ limit: 3 })
  twice(): string {
    return 'ok';
  }
}

/** The refusal Nest's BaseWsExceptionFilter emits as 'exception'. */
interface Refusal {
  status: string;
  statusCode: number;
  message: string;
  retryAfterMs: number;
}

async function start(store: Store): Promise<{ app: INestApplication; url: string }> {
  @Module({
    imports: [
      FloodgateModule.forRoot({
        store,
        prefix: `ws${Math.random().toString(36).slice(2, 10)}`,
        limit: 2,
        windowMs: '1m',
        // Keys starting with 'k' are known accounts; no key: the client IP.
        resolveKey: (key: string) => (key.startsWith('k') ? { account: key } : null),
      }),
    ],
    providers: [{ provide: APP_GUARD, useClass: FloodgateGuard }, ChatGateway, GuardedTwiceGateway],
  })
  class AppModule {}
  const app = await NestFactory.create(AppModule, { logger: ['error'], abortOnError: false });
  await app.listen(0, '127.0.0.1');
  return { app, url: `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}` };
}

const sockets: Socket[] = [];
async function connect(url: string, headers: Record<string, string> = {}): Promise<Socket> {
  const socket = io(url, { transports: ['websocket'], extraHeaders: headers, reconnection: false, forceNew: true });
  sockets.push(socket);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('connect_error', reject);
  });
  return socket;
}

/** Sends `n` messages; resolves once each was answered: handled (its ack) or refused (an 'exception' event). Waits on events, not on time. */
async function send(socket: Socket, event: string, n: number): Promise<{ handled: number; refused: Refusal[] }> {
  const refused: Refusal[] = [];
  let handled = 0;
  await new Promise<void>((resolve) => {
    const done = () => handled + refused.length === n && resolve();
    const onException = (error: Refusal) => {
      refused.push(error);
      done();
    };
    socket.on('exception', onException);
    for (let i = 0; i < n; i++) {
      socket.emit(event, {}, () => {
        handled++;
        done();
      });
    }
  });
  socket.off('exception');
  return { handled, refused };
}

const stores: [string, () => Store][] = [
  ['memory', () => new MemoryStore()],
  ['redis', () => new RedisStore({ client, timeoutMs: 5_000 })],
];

describe.each(stores)('on %s', (_name, makeStore) => {
  let app: INestApplication | undefined;
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.disconnect();
    await app?.close();
    app = undefined;
    for (const k of Object.keys(calls) as (keyof typeof calls)[]) calls[k] = 0;
  });

  it('@RateLimit({ limit: 3 }): 5 messages, 3 handled and 2 refused with retryAfterMs; the handler runs 3 times', async () => {
    const started = await start(makeStore());
    app = started.app;
    const socket = await connect(started.url);
    const { handled, refused } = await send(socket, 'limited', 5);
    expect({ handled, refused: refused.length, ran: calls.limited }).toEqual({ handled: 3, refused: 2, ran: 3 });
    for (const r of refused) {
      expect(r).toMatchObject({ status: 'error', statusCode: 429, message: 'Too Many Requests' });
      expect(r.retryAfterMs).toBeGreaterThan(0);
      // The default sliding-window-counter weighs the previous window: its retry can reach past one window (never two), plus up to 1 s of jitter.
      expect(r.retryAfterMs).toBeLessThanOrEqual(121_000);
    }
    // Another handler: its own bucket at the module's limit of 2.
    expect(await send(socket, 'plain', 3)).toMatchObject({ handled: 2, refused: [{ statusCode: 429 }] });
  });

  it('@SkipRateLimit(): every message is handled, past the module limit', async () => {
    const started = await start(makeStore());
    app = started.app;
    const socket = await connect(started.url);
    expect(await send(socket, 'free', 5)).toEqual({ handled: 5, refused: [] });
    expect(calls.free).toBe(5);
  });

  it('two clients with different API keys have separate buckets; a reconnect with the same key does not get a fresh one', async () => {
    const started = await start(makeStore());
    app = started.app;
    const a = await connect(started.url, { 'x-api-key': 'k-alice' });
    const b = await connect(started.url, { 'x-api-key': 'k-bob' });
    expect((await send(a, 'limited', 4)).handled).toBe(3);
    expect((await send(b, 'limited', 4)).handled).toBe(3);
    const again = await connect(started.url, { 'x-api-key': 'k-alice' });
    expect(await send(again, 'limited', 1)).toMatchObject({ handled: 0, refused: [{ statusCode: 429 }] });
  });

  it('a spoofed X-Forwarded-For without trust proxy does not buy a fresh bucket', async () => {
    const started = await start(makeStore());
    app = started.app;
    const first = await connect(started.url, { 'x-forwarded-for': '203.0.113.1' });
    expect((await send(first, 'limited', 3)).handled).toBe(3);
    for (const spoofed of ['203.0.113.2', '198.51.100.7, 203.0.113.3']) {
      const socket = await connect(started.url, { 'x-forwarded-for': spoofed });
      expect(await send(socket, 'limited', 1)).toMatchObject({ handled: 0, refused: [{ statusCode: 429 }] });
    }
    expect(calls.limited).toBe(3);
  });

  it('the guard on the gateway and on the handler counts a message once', async () => {
    const started = await start(makeStore());
    app = started.app;
    const socket = await connect(started.url);
    expect((await send(socket, 'twice', 5)).handled).toBe(3);
  });
});

describe('trust proxy on the Express platform', () => {
  let app: INestApplication | undefined;
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.disconnect();
    await app?.close();
  });

  it("with `trust proxy` set to loopback, X-Forwarded-For's client hop is the identity (as req.ip would be)", async () => {
    const started = await start(new MemoryStore());
    app = started.app;
    (app.getHttpAdapter().getInstance() as { set(name: string, value: unknown): void }).set('trust proxy', 'loopback');
    const a = await connect(started.url, { 'x-forwarded-for': '203.0.113.1' });
    const b = await connect(started.url, { 'x-forwarded-for': '203.0.113.2' });
    expect((await send(a, 'limited', 4)).handled).toBe(3);
    expect((await send(b, 'limited', 4)).handled).toBe(3);
  });
});

describe('at start', () => {
  it('a bad @RateLimit() option on a gateway handler fails the app start, naming the handler', async () => {
    @WebSocketGateway()
    @UseGuards(FloodgateGuard)
    class BadGateway {
      @SubscribeMessage('bad')
      @RateLimit({ cost: -1 })
      bad(): string {
        return 'ok';
      }
    }
    @Module({ imports: [FloodgateModule.forRoot({ store: new MemoryStore() })], providers: [BadGateway] })
    class BadModule {}
    const app = await NestFactory.create(BadModule, { logger: false, abortOnError: false });
    await expect(app.init()).rejects.toMatchObject({ code: 'FG_INVALID_OPTION', option: 'cost', message: expect.stringMatching(/^@RateLimit\(\) on BadGateway.bad: Invalid option `cost`: got -1/) });
    await app.close().catch(() => undefined);
  });

  it("the gateway metadata keys @floodgate/nestjs names are @nestjs/websockets' own", () => {
    expect({ GATEWAY_METADATA, MESSAGE_MAPPING_METADATA, MESSAGE_METADATA }).toEqual({
      GATEWAY_METADATA: wsConstants.GATEWAY_METADATA,
      MESSAGE_MAPPING_METADATA: wsConstants.MESSAGE_MAPPING_METADATA,
      MESSAGE_METADATA: wsConstants.MESSAGE_METADATA,
    });
  });
});
