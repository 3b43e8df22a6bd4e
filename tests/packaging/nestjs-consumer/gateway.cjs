// A CommonJS Nest gateway as a user writes it without a compiler: the installed @floodgate/nestjs tarball limits a Socket.IO @SubscribeMessage handler; five messages from a real client, the answers printed as JSON.
'use strict';
require('reflect-metadata');
const { Module, UseGuards } = require('@nestjs/common');
const { NestFactory } = require('@nestjs/core');
const { SubscribeMessage, WebSocketGateway } = require('@nestjs/websockets');
const { io } = require('socket.io-client');
const { MemoryStore } = require('@floodgate/core');
const { FloodgateGuard, FloodgateModule, RateLimit } = require('@floodgate/nestjs');

class ChatGateway {
  message() {
    return 'ok';
  }
}
const descriptor = Object.getOwnPropertyDescriptor(ChatGateway.prototype, 'message');
SubscribeMessage('message')(ChatGateway.prototype, 'message', descriptor);
RateLimit({ limit: 3, windowMs: '1m' })(ChatGateway.prototype, 'message', descriptor);
UseGuards(FloodgateGuard)(ChatGateway);
WebSocketGateway()(ChatGateway);
class AppModule {}
Module({ imports: [FloodgateModule.forRoot({ store: new MemoryStore() })], providers: [ChatGateway] })(AppModule);

async function main() {
  const app = await NestFactory.create(AppModule, { logger: false });
  await app.listen(0, '127.0.0.1');
  const socket = io(`http://127.0.0.1:${app.getHttpServer().address().port}`, { transports: ['websocket'], reconnection: false });
  await new Promise((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('connect_error', reject);
  });
  // Each message answered once: its ack (handled) or Nest's 'exception' event (refused).
  const seen = { handled: 0, refused: [] };
  await new Promise((resolve) => {
    const done = () => seen.handled + seen.refused.length === 5 && resolve();
    socket.on('exception', (error) => {
      seen.refused.push(error);
      done();
    });
    for (let i = 0; i < 5; i++) socket.emit('message', {}, () => (seen.handled++, done()));
  });
  socket.disconnect();
  await app.close();
  const nest = require('@nestjs/core/package.json').version;
  process.stdout.write(`${JSON.stringify({ resolved: require.resolve('@floodgate/nestjs'), node: process.version, nest, ...seen })}\n`);
}

main().catch((error) => {
  process.stderr.write(`${error && error.stack ? error.stack : String(error)}\n`);
  process.exit(1);
});
