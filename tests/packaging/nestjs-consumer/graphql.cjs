// A CommonJS Nest GraphQL app (Apollo driver, schema-first) as a user writes it without a compiler: the installed @floodgate/nestjs tarball limits a @Query resolver; five queries over HTTP, the answers printed as JSON.
'use strict';
require('reflect-metadata');
const { Module, UseGuards } = require('@nestjs/common');
const { NestFactory } = require('@nestjs/core');
const { GraphQLModule, Query, Resolver } = require('@nestjs/graphql');
const { ApolloDriver } = require('@nestjs/apollo');
const { MemoryStore } = require('@floodgate/core');
const { FloodgateGuard, FloodgateModule, RateLimit } = require('@floodgate/nestjs');

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

async function main() {
  const app = await NestFactory.create(AppModule, { logger: false });
  await app.listen(0, '127.0.0.1');
  const url = `http://127.0.0.1:${app.getHttpServer().address().port}/graphql`;
  const answers = [];
  for (let i = 0; i < 5; i++) {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ hello }' }) });
    answers.push({ status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.json() });
  }
  await app.close();
  const nest = require('@nestjs/core/package.json').version;
  // @nestjs/graphql's exports map does not expose its package.json: read it from the app's node_modules.
  const graphqlVersion = JSON.parse(require('node:fs').readFileSync(require('node:path').join(__dirname, 'node_modules', '@nestjs', 'graphql', 'package.json'), 'utf8')).version;
  process.stdout.write(`${JSON.stringify({ resolved: require.resolve('@floodgate/nestjs'), node: process.version, nest, graphql: graphqlVersion, answers })}\n`);
}

main().catch((error) => {
  process.stderr.write(`${error && error.stack ? error.stack : String(error)}\n`);
  process.exit(1);
});
