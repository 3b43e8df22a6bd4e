// floodgateApolloPlugin: the Apollo Server 5 plugin: reserve an operation's cost once it is resolved, settle the actual cost before the response is sent.
import type { ApolloServerPlugin, BaseContext, GraphQLRequestListener } from '@apollo/server';
import { invalidOption } from '@floodgate/core/http';
import { notRunResult } from './answers';
import { nodeFactsReader, type NodeRequestLike } from './http-facts';
import { createOperationLimiter, type Admission, type OperationLimiter } from './operation-limiter';
import type { GraphqlRateLimitOptions } from './options';

interface ApolloOptions extends GraphqlRateLimitOptions {
  /**
   * The Node request of an operation, from the context value your `context` function returns.
   * Default `(context) => context.req`: return `{ req }` from `context` (startStandaloneServer's and
   * expressMiddleware's `context` functions get it). Without it the client IP is unknown: every
   * caller without an API key shares one bucket (FG_IP_MISSING).
   */
  requestOf?: (context: BaseContext) => NodeRequestLike | undefined;
}
export type { ApolloOptions as ApolloRateLimitOptions };

const defaultRequestOf = (context: BaseContext) => (context as { req?: NodeRequestLike }).req;

/**
 * Rate limiting by cost for Apollo Server: `new ApolloServer({ schema, plugins: [floodgateApolloPlugin({ limit: 1000, windowMs: '1m' })] })`.
 * Once the operation is resolved its requested cost is reserved; an operation over
 * `maxOperationCost` or one that does not fit is answered with a GraphQL error (MAX_COST_EXCEEDED
 * 400, THROTTLED 429 with Retry-After) and never runs. Before the response is sent the actual cost
 * is settled and `extensions.cost` (Shopify's shape) added; the RateLimit headers go on the HTTP
 * response. See docs/graphql.md.
 */
export function floodgateApolloPlugin<TContext extends BaseContext = BaseContext>(options: ApolloOptions = {}): ApolloServerPlugin<TContext> & { readonly limiter: OperationLimiter } {
  const { requestOf = defaultRequestOf, ...rest } = options;
  if (typeof requestOf !== 'function') invalidOption('requestOf', requestOf, 'a function (context) => the Node request');
  const limiter = createOperationLimiter(rest);
  const factsOf = nodeFactsReader(limiter.options.trustProxy);
  return {
    limiter,
    async requestDidStart(): Promise<GraphQLRequestListener<TContext>> {
      let admission: Admission | undefined;
      return {
        async didResolveOperation(ctx) {
          const req = requestOf(ctx.contextValue);
          const headers = req ? undefined : (new Headers([...ctx.request.http?.headers ?? []]) as Headers);
          const operation = { schema: ctx.schema, document: ctx.document, operationName: ctx.operationName, variables: ctx.request.variables };
          admission = await limiter.begin(factsOf(req, headers), operation, ctx.contextValue);
          for (const [name, value] of admission.headers) ctx.response.http.headers.set(name.toLowerCase(), value);
          if (admission.kind === 'refused') throw notRunResult(admission, 'status-map').errors![0];
        },
        async responseForOperation(ctx) {
          // A dry run: its cost, never its execution.
          if (admission?.kind !== 'dry-run') return null;
          return { http: ctx.response.http, body: { kind: 'single', singleResult: notRunResult(admission, 'none') } };
        },
        async willSendResponse(ctx) {
          const body = ctx.response.body;
          if (!admission || body.kind !== 'single') return;
          const cost = admission.kind === 'admitted' ? await admission.finish(body.singleResult.data) : admission.cost;
          body.singleResult.extensions = { ...body.singleResult.extensions, cost };
        },
      };
    },
  };
}
