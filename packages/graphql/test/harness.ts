// Real GraphQL servers on loopback for the tests: Yoga on node:http, Apollo Server's standalone server, Mercurius on Fastify; one schema with the cost directives and resolvers that count their calls.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSchema, createYoga } from 'graphql-yoga';
import { ApolloServer } from '@apollo/server';
import { startStandaloneServer } from '@apollo/server/standalone';
import Fastify from 'fastify';
import mercurius from 'mercurius';
import { floodgateApolloPlugin, floodgateMercurius, useFloodgate, type GraphqlRateLimitOptions } from '../src';

export const SDL = `
directive @cost(weight: String!) on ARGUMENT_DEFINITION | ENUM | FIELD_DEFINITION | INPUT_FIELD_DEFINITION | OBJECT | SCALAR
directive @listSize(assumedSize: Int, slicingArguments: [String!], sizedFields: [String!], requireOneSlicingArgument: Boolean = true) on FIELD_DEFINITION
type Item { id: ID! name: String }
type Query {
  "Up to \`first\` items; the resolver returns min(first, Query.available) of them."
  items(first: Int!): [Item!]! @listSize(slicingArguments: ["first"])
  expensive: Int @cost(weight: "5")
}
type Mutation { touch: Int }
`;

/** Counts of resolver calls, per field. */
export interface Calls {
  items: number;
  touch: number;
}

export interface Running {
  readonly url: string;
  readonly calls: Calls;
  close(): Promise<void>;
}

export type ServerName = 'yoga' | 'apollo' | 'mercurius';

/** Resolvers that count their calls; `items` returns at most `available` items whatever `first` asks. */
function resolversFor(calls: Calls, available: number) {
  return {
    Query: {
      items: (_: unknown, args: { first: number }) => {
        calls.items++;
        return Array.from({ length: Math.min(args.first, available) }, (_v, i) => ({ id: String(i), name: `item ${i}` }));
      },
      expensive: () => 1,
    },
    Mutation: { touch: () => ++calls.touch },
  };
}

function listen(server: Server): Promise<string> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`)));
}

/** Starts one of the three servers with the plugin under `options`; `available`: how many items `items` returns at most. */
export async function startServer(name: ServerName, options: GraphqlRateLimitOptions, available = 3, fastifyTrustProxy?: boolean | string): Promise<Running> {
  const calls: Calls = { items: 0, touch: 0 };
  const resolvers = resolversFor(calls, available);
  if (name === 'yoga') {
    const yoga = createYoga({ schema: createSchema({ typeDefs: SDL, resolvers }), plugins: [useFloodgate(options)], logging: false, maskedErrors: false });
    const server = createServer(yoga);
    const url = await listen(server);
    return { url, calls, close: () => new Promise<void>((r) => server.close(() => r())) };
  }
  if (name === 'apollo') {
    const apollo = new ApolloServer<{ req: unknown }>({ schema: createSchema({ typeDefs: SDL, resolvers }), plugins: [floodgateApolloPlugin(options)] });
    const { url } = await startStandaloneServer(apollo, { listen: { port: 0, host: '127.0.0.1' }, context: async ({ req }) => ({ req }) });
    return { url, calls, close: () => apollo.stop() };
  }
  const app = Fastify({ trustProxy: fastifyTrustProxy ?? false });
  // cache: false: Mercurius's query cache loads quick-lru with a dynamic import(), which Jest's CommonJS runtime cannot run.
  await app.register(mercurius, { schema: SDL, resolvers: resolvers as never, cache: false });
  floodgateMercurius(app as never, options);
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/graphql`, calls, close: () => app.close() };
}

export interface Answer {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: {
    data?: unknown;
    errors?: { message: string; extensions?: Record<string, unknown> }[];
    extensions?: { cost?: { requestedQueryCost: number; actualQueryCost: number | null; throttleStatus: { maximumAvailable: number; currentlyAvailable: number; restoreRate: number } | null } };
  };
}

/** POSTs one operation over HTTP (JSON), as a client would. */
export async function post(url: string, query: string, headers: Record<string, string> = {}, extra: { variables?: Record<string, unknown>; operationName?: string } = {}): Promise<Answer> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json', ...headers }, body: JSON.stringify({ query, ...extra }) });
  return { status: res.status, headers: Object.fromEntries(res.headers), body: (await res.json()) as Answer['body'] };
}
