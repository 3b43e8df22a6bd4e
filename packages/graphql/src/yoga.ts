// useFloodgate: the GraphQL Yoga (and Envelop) plugin: reserve an operation's cost before execution, settle the actual cost after, extensions.cost and RateLimit headers.
import type { Plugin } from 'graphql-yoga';
import type { HeaderPair } from '@floodgate/core/http';
import { isAsyncIterable, notRunResult } from './answers';
import { nodeFactsReader, type NodeRequestLike } from './http-facts';
import { createOperationLimiter, type OperationLimiter } from './operation-limiter';
import type { GraphqlRateLimitOptions } from './options';

interface YogaContext {
  readonly request?: Request;
  readonly req?: NodeRequestLike;
}

/**
 * Rate limiting by cost for GraphQL Yoga: `createYoga({ schema, plugins: [useFloodgate({ limit: 1000, windowMs: '1m' })] })`.
 * Each operation's requested cost (from `@cost`/`@listSize`, or `estimate`) is reserved before it
 * runs; one over `maxOperationCost` or one that does not fit is refused with a GraphQL error
 * (codes MAX_COST_EXCEEDED, THROTTLED with `retryAfterMs`) and never runs; after it runs the
 * actual cost is settled. Every answer carries `extensions.cost` (Shopify's shape) and the
 * RateLimit headers. Identity: API key, else the client IP (the Node peer, X-Forwarded-For only
 * through `trustProxy`). A subscription reserves its requested cost when it starts; its first
 * event settles it, each later event is charged its own cost (one that does not fit is replaced by
 * the THROTTLED error). Incremental delivery (@defer/@stream) is charged its requested cost and
 * not settled. See docs/graphql.md.
 */
export function useFloodgate(options: GraphqlRateLimitOptions = {}): Plugin & { readonly limiter: OperationLimiter } {
  const limiter = createOperationLimiter(options);
  const factsOf = nodeFactsReader(limiter.options.trustProxy);
  const headersFor = new WeakMap<Request, readonly HeaderPair[]>();
  return {
    limiter,
    async onExecute({ args, setResultAndStopExecution }) {
      const context = args.contextValue as YogaContext;
      const operation = { schema: args.schema, document: args.document, operationName: args.operationName, variables: args.variableValues };
      const admission = await limiter.begin(factsOf(context.req, context.request?.headers), operation, context);
      if (context.request && admission.headers.length > 0) headersFor.set(context.request, admission.headers);
      if (admission.kind !== 'admitted') return setResultAndStopExecution(notRunResult(admission, 'status'));
      return {
        async onExecuteDone({ result, setResult }) {
          // A stream (@defer/@stream) keeps its reservation: its parts' data is not one response.
          if (isAsyncIterable(result)) return;
          const cost = await admission.finish(result.data);
          setResult({ ...result, extensions: { ...result.extensions, cost } });
        },
      };
    },
    async onSubscribe({ args, setResultAndStopExecution }) {
      const context = args.contextValue as YogaContext;
      const operation = { schema: args.schema, document: args.document, operationName: args.operationName, variables: args.variableValues };
      const facts = factsOf(context.req, context.request?.headers);
      const admission = await limiter.begin(facts, operation, context);
      if (context.request && admission.headers.length > 0) headersFor.set(context.request, admission.headers);
      if (admission.kind !== 'admitted') return setResultAndStopExecution(notRunResult(admission, 'status'));
      // Per event: the first settles the subscription's reservation, each later one is charged its own cost.
      let first = true;
      return {
        onSubscribeResult: () => ({
          async onNext({ result, setResult }) {
            const charged = first ? admission : await limiter.event(facts, operation, context, result.data);
            const cost = first ? await admission.finish(result.data) : charged.cost;
            first = false;
            if (charged.kind === 'refused') return setResult({ ...notRunResult(charged, 'none'), data: null });
            setResult({ ...result, extensions: { ...result.extensions, cost } });
          },
        }),
      };
    },
    onResponse({ request, response }) {
      const headers = headersFor.get(request);
      if (headers) for (const [name, value] of headers) response.headers.set(name, value);
    },
  };
}
