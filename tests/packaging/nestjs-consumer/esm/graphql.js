// An ES module Nest GraphQL app (Apollo driver, schema-first) as a user writes it without a compiler: the installed @floodgate/nestjs tarball limits a @Query resolver; five queries over HTTP, the answers printed as JSON.
import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import { Module, UseGuards } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { GraphQLModule, Query, Resolver } from '@nestjs/graphql';
import { ApolloDriver } from '@nestjs/apollo';
import { MemoryStore } from '@floodgate/core';
import { FloodgateGuard, FloodgateModule, RateLimit } from '@floodgate/nestjs';

class HelloResolver {
  hello() {
    return 'hi';
  }
}
const descriptor = Object.getOwnPropertyDescriptor(HelloResolver.prototype, 'hello');
Query('hello')(HelloResolver.prototype, 'hello', descriptor);
RateLimit({ limit: 3, windowMs: '1m' })(HelloResolver.prototype, 'hello', descriptor);
UseGuards(FloodgateGuard)(HelloResolver);
Resolver('Query')(HelloResolver);
class AppModule {}
const graphql = GraphQLModule.forRoot({ driver: ApolloDriver, typeDefs: 'type Query { hello: String }', context: ({ req, res }) => ({ req, res }) });
Module({ imports: [FloodgateModule.forRoot({ store: new MemoryStore() }), graphql], providers: [HelloResolver] })(AppModule);

const app = await NestFactory.create(AppModule, { logger: false });
await app.listen(0, '127.0.0.1');
const url = `http://127.0.0.1:${app.getHttpServer().address().port}/graphql`;
const answers = [];
for (let i = 0; i < 5; i++) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ hello }' }) });
  answers.push({ status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.json() });
}
await app.close();
const version = (name) => JSON.parse(readFileSync(new URL(`../node_modules/${name}/package.json`, import.meta.url), 'utf8')).version;
const report = { resolved: import.meta.resolve('@floodgate/nestjs'), node: process.version, nest: version('@nestjs/core'), graphql: version('@nestjs/graphql'), answers };
process.stdout.write(`${JSON.stringify(report)}\n`);
