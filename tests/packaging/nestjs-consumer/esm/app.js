// An ES module Nest app ("type": "module") as a user writes it without a compiler: the installed @floodgate/nestjs tarball on Express and Fastify, three requests each, the answers printed as JSON.
import 'reflect-metadata';
import { Controller, Get, Module } from '@nestjs/common';
import { APP_GUARD, NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { MemoryStore } from '@floodgate/core';
import { FloodgateGuard, FloodgateModule, RateLimit } from '@floodgate/nestjs';

async function serve(platform) {
  class UsersController {
    findOne() {
      return { ok: true };
    }
  }
  const descriptor = Object.getOwnPropertyDescriptor(UsersController.prototype, 'findOne');
  Get(':id')(UsersController.prototype, 'findOne', descriptor);
  RateLimit({ limit: 2, windowMs: '1m', retryAfterJitterMs: 0 })(UsersController.prototype, 'findOne', descriptor);
  Controller('users')(UsersController);
  class AppModule {}
  Module({
    imports: [FloodgateModule.forRoot({ store: new MemoryStore() })],
    controllers: [UsersController],
    providers: [{ provide: APP_GUARD, useClass: FloodgateGuard }],
  })(AppModule);
  const app = await NestFactory.create(AppModule, platform === 'express' ? new ExpressAdapter() : new FastifyAdapter(), { logger: false });
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address();
  const seen = [];
  for (const id of [1, 2, 3]) {
    const res = await fetch(`http://127.0.0.1:${port}/users/${id}`);
    seen.push({ status: res.status, limit: res.headers.get('ratelimit-limit'), remaining: res.headers.get('ratelimit-remaining'), retryAfter: res.headers.get('retry-after'), type: res.headers.get('content-type'), body: await res.text() });
  }
  await app.close();
  return seen;
}

const report = {
  resolved: import.meta.resolve('@floodgate/nestjs'),
  node: process.version,
  nest: JSON.parse((await import('node:fs')).readFileSync(new URL(import.meta.resolve('@nestjs/core/package.json')), 'utf8')).version,
  express: await serve('express'),
  fastify: await serve('fastify'),
};
process.stdout.write(`${JSON.stringify(report)}\n`);
