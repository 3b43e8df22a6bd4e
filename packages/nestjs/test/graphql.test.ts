// NestJS GraphQL resolvers (code-first and schema-first; the Apollo driver on Express, the Mercurius driver on Fastify) limited by FloodgateGuard and @RateLimit(), on MemoryStore and a real Redis: the refused call's resolver never runs.
import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import { Module, type INestApplication } from '@nestjs/common';
import { APP_GUARD, NestFactory } from '@nestjs/core';
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { MercuriusDriver, type MercuriusDriverConfig } from '@nestjs/mercurius';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Args, Field, GraphQLModule, ID, Int, ObjectType, Query, Resolver } from '@nestjs/graphql';
import { MemoryStore, RedisStore, type Store } from '@floodgate/core';
import { startRedis, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import { floodgateApolloPlugin } from '@floodgate/graphql';
import { FloodgateGuard, FloodgateModule, RateLimit, SkipRateLimit } from '../src';

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

const calls = { items: 0, free: 0, hello: 0, costly: 0 };

@ObjectType()
class Item {
  @Field(() => ID)
  id!: string;
}

/** Code-first: decorators make the schema. */
@Resolver(() => Item)
class ItemsResolver {
  @Query(() => [Item])
  @RateLimit({ limit: 2 })
  items(): Item[] {
    calls.items++;
    return [{ id: '1' }];
  }

  @Query(() => Int)
  @SkipRateLimit()
  free(): number {
    return ++calls.free;
  }

  @Query(() => Int)
  @RateLimit({ cost: 3 })
  costly(@Args('n', { type: () => Int }) n: number): number {
    calls.costly++;
    return n;
  }
}

/** Schema-first: the SDL names the fields; the resolver class is bound to Query by name. */
@Resolver('Query')
class HelloResolver {
  @Query('hello')
  @RateLimit({ limit: 1 })
  hello(): string {
    calls.hello++;
    return 'hi';
  }
}

async function start(kind: 'code-first' | 'schema-first' | 'mercurius' | 'cost', store: Store): Promise<{ app: INestApplication; url: string }> {
  const context = ({ req, res }: { req: unknown; res: unknown }) => ({ req, res });
  const graphql =
    kind === 'cost'
      ? // Whole operations by cost: @floodgate/graphql's Apollo plugin in the driver's plugins (no guard).
        GraphQLModule.forRoot<ApolloDriverConfig>({ driver: ApolloDriver, autoSchemaFile: true, context, plugins: [floodgateApolloPlugin({ store, prefix: `cost${Math.random().toString(36).slice(2, 10)}`, limit: 100, windowMs: '1m' })] })
      : kind === 'code-first'
      ? GraphQLModule.forRoot<ApolloDriverConfig>({ driver: ApolloDriver, autoSchemaFile: true, context })
      : kind === 'schema-first'
        ? GraphQLModule.forRoot<ApolloDriverConfig>({ driver: ApolloDriver, typeDefs: 'type Query { hello: String }', context })
        : // Mercurius's own context carries `reply` (its `request` the Fastify request). cache: false: its query cache loads quick-lru with a dynamic import() Jest's CommonJS runtime cannot run.
          GraphQLModule.forRoot<MercuriusDriverConfig>({ driver: MercuriusDriver, autoSchemaFile: true, cache: false });
  @Module({
    imports: [FloodgateModule.forRoot({ store, prefix: `gql${Math.random().toString(36).slice(2, 10)}`, limit: 100, windowMs: '1m' }), graphql],
    providers: kind === 'cost' ? [ItemsResolver] : [{ provide: APP_GUARD, useClass: FloodgateGuard }, kind === 'schema-first' ? HelloResolver : ItemsResolver],
  })
  class AppModule {}
  const options = { logger: ['error' as const], abortOnError: false };
  const app = kind === 'mercurius' ? await NestFactory.create(AppModule, new FastifyAdapter(), options) : await NestFactory.create(AppModule, options);
  await app.listen(0, '127.0.0.1');
  return { app, url: `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}/graphql` };
}

async function post(url: string, query: string) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) });
  const body = (await res.json()) as { data?: Record<string, unknown> | null; errors?: { message: string; extensions?: Record<string, unknown> }[] };
  return { headers: Object.fromEntries(res.headers), body };
}

const stores: [string, () => Store][] = [
  ['memory', () => new MemoryStore()],
  ['redis', () => new RedisStore({ client, timeoutMs: 5_000 })],
];

describe.each(stores)('on %s', (_name, makeStore) => {
  let app: INestApplication | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
    for (const k of Object.keys(calls) as (keyof typeof calls)[]) calls[k] = 0;
  });

  it.each(['code-first', 'mercurius'] as const)('%s: a resolver limited by @RateLimit() is refused on its third call and does not run; @SkipRateLimit() and cost apply', async (kind) => {
    const started = await start(kind, makeStore());
    app = started.app;
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await post(started.url, '{ items { id } }'));
    expect(answers.map((a) => a.body.errors?.length ?? 0)).toEqual([0, 0, 1]);
    expect(answers[0].body.data).toEqual({ items: [{ id: '1' }] });
    expect(answers.map((a) => a.headers['ratelimit-remaining'])).toEqual(['1', '0', '0']);
    expect(answers[2].body.errors![0].message).toMatch(/Too Many Requests|limit/i);
    expect(Number(answers[2].headers['retry-after'])).toBeGreaterThan(0);
    expect(calls.items).toBe(2);
    // An exempt resolver beside it: no headers of its own, never refused.
    for (let i = 0; i < 3; i++) expect((await post(started.url, '{ free }')).body.errors).toBeUndefined();
    expect(calls.free).toBe(3);
    // cost 3 of the module's 100: 33 fit, the 34th is refused.
    let refused = 0;
    for (let i = 0; i < 34; i++) refused += (await post(started.url, '{ costly(n: 1) }')).body.errors ? 1 : 0;
    expect({ refused, ran: calls.costly }).toEqual({ refused: 1, ran: 33 });
  });

  it("@floodgate/graphql's Apollo plugin in Nest's Apollo driver: requested 10 (a list of assumed length 10), actual 1, settled", async () => {
    const started = await start('cost', makeStore());
    app = started.app;
    const first = await post(started.url, '{ items { id } }');
    expect(first.body).toEqual({
      data: { items: [{ id: '1' }] },
      extensions: { cost: { requestedQueryCost: 10, actualQueryCost: 1, throttleStatus: { maximumAvailable: 100, currentlyAvailable: 99, restoreRate: 1.667 } } },
    });
    expect(first.headers['ratelimit-remaining']).toBe('90');
  });

  it('schema-first: the resolver bound by name is limited the same way', async () => {
    const started = await start('schema-first', makeStore());
    app = started.app;
    const first = await post(started.url, '{ hello }');
    const second = await post(started.url, '{ hello }');
    expect(first.body).toEqual({ data: { hello: 'hi' } });
    expect(second.body.errors).toHaveLength(1);
    expect(second.headers['ratelimit-remaining']).toBe('0');
    expect(calls.hello).toBe(1);
  });
});
