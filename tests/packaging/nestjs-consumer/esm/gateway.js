// An ES module Nest gateway as a user writes it without a compiler: the installed @floodgate/nestjs tarball limits a Socket.IO @SubscribeMessage handler; five messages from a real client, the answers printed as JSON.
import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import { Module, UseGuards } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';
import { io } from 'socket.io-client';
import { MemoryStore } from '@floodgate/core';
import { FloodgateGuard, FloodgateModule, RateLimit } from '@floodgate/nestjs';

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
const report = {
  resolved: import.meta.resolve('@floodgate/nestjs'),
  node: process.version,
  nest: JSON.parse(readFileSync(new URL(import.meta.resolve('@nestjs/core/package.json')), 'utf8')).version,
  ...seen,
};
process.stdout.write(`${JSON.stringify(report)}\n`);
