// The graphql-api example app: a GraphQL Yoga server whose operations are limited by cost per caller (API key, else client IP), reserved before they run and settled after.
import { MemoryStore, RedisStore, type Logger } from '@floodgate/core';
import { COST_DIRECTIVES_SDL, useFloodgate } from '@floodgate/graphql';
import { createSchema, createYoga, type YogaServerInstance } from 'graphql-yoga';
import type { Redis } from 'ioredis';

export interface AppOptions {
  /** The ioredis client the RedisStore uses; the app never closes it. Without one the app counts in memory (per process). */
  redis?: Redis;
  /** How long the RedisStore waits for Redis (RedisStoreOptions.timeoutMs). Default Floodgate's, 100 ms. */
  redisTimeoutMs?: number;
  /** Key prefix in Redis. Default 'fg'. Tests give each run its own. */
  prefix?: string;
  /** Where Floodgate reports a failing store (once per change, not per request). Default console. */
  logger?: Logger;
}

/** Cost units per caller per minute. */
export const LIMIT = 100;
/** The most one operation may request. */
export const MAX_OPERATION_COST = 50;
/** How many products the catalogue holds: `products(first: 10)` requests 10 and returns (and is charged) at most this many. */
export const CATALOGUE_SIZE = 3;

const typeDefs = `${COST_DIRECTIVES_SDL}
type Review { stars: Int! }
type Product {
  id: ID!
  name: String!
  "Reviews cost 2 each: they come from another service."
  reviews(first: Int!): [Review!]! @listSize(slicingArguments: ["first"]) @cost(weight: "2")
}
type Query {
  products(first: Int!): [Product!]! @listSize(slicingArguments: ["first"])
}
type Mutation { "Weighs 10, the default for a mutation's root field." restock: Boolean }
`;

const products = Array.from({ length: CATALOGUE_SIZE }, (_, i) => ({ id: String(i + 1), name: `product ${i + 1}` }));

export function createApp(options: AppOptions = {}): YogaServerInstance<Record<string, unknown>, Record<string, unknown>> {
  const store = options.redis ? new RedisStore({ client: options.redis, timeoutMs: options.redisTimeoutMs }) : new MemoryStore();
  const resolvers = {
    Query: { products: (_: unknown, { first }: { first: number }) => products.slice(0, Math.max(0, first)) },
    Product: { reviews: (_: unknown, { first }: { first: number }) => Array.from({ length: Math.min(first, 1) }, () => ({ stars: 5 })) },
    Mutation: { restock: () => true },
  };
  return createYoga({
    schema: createSchema({ typeDefs, resolvers }),
    logging: false,
    plugins: [useFloodgate({ store, prefix: options.prefix, logger: options.logger, limit: LIMIT, windowMs: '1m', maxOperationCost: MAX_OPERATION_COST })],
  });
}
