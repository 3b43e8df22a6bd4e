// floodgateMercurius: Mercurius hooks: reserve an operation's cost in preExecution (an operation refused or dry-run runs only `__typename`), settle the actual cost in onResolution.
import { Kind, parse, type DocumentNode, type ExecutionResult } from 'graphql';
import { invalidOption, trustProxyOf } from '@floodgate/core/http';
import { notRunResult } from './answers';
import { createOperationLimiter, type Admission, type OperationLimiter } from './operation-limiter';
import type { GraphqlRateLimitOptions } from './options';

/** The part of a Fastify request read here: Fastify's client IP (under its `trustProxy`), headers, and the operation name the client sent. */
interface FastifyRequestLike {
  readonly ip: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body?: unknown;
  readonly query?: unknown;
}
interface MercuriusContextLike {
  readonly reply: { readonly request: FastifyRequestLike; header(name: string, value: string): unknown; code(status: number): unknown };
}
type Hook = (...args: never[]) => Promise<unknown>;
/** The part of a Fastify instance with Mercurius registered that this reads. */
export interface MercuriusAppLike {
  readonly initialConfig: { readonly trustProxy?: unknown };
  readonly graphql: { addHook(name: 'preExecution' | 'onResolution', hook: Hook): void };
}

/** A document that runs nothing but `__typename`, under every operation name of the original (so `operationName` still finds its operation). */
function inertDocument(document: DocumentNode): DocumentNode {
  const names = document.definitions.flatMap((d) => (d.kind === Kind.OPERATION_DEFINITION && d.name ? [d.name.value] : []));
  return parse(names.length === 0 ? '{ __typename }' : names.map((n) => `query ${n} { __typename }`).join('\n'));
}

function operationNameOf(request: FastifyRequestLike): string | undefined {
  for (const from of [request.body, request.query]) {
    const name = from && typeof from === 'object' ? (from as { operationName?: unknown }).operationName : undefined;
    if (typeof name === 'string') return name;
  }
  return undefined;
}

/**
 * Rate limiting by cost for Mercurius, after `await app.register(mercurius, { schema, resolvers })`:
 * `floodgateMercurius(app, { limit: 1000, windowMs: '1m' })`. The client IP is Fastify's
 * `request.ip` under its `trustProxy`. A refused operation (MAX_COST_EXCEEDED, THROTTLED) and a dry
 * run never reach a resolver: their document is replaced by one that selects only `__typename`,
 * and the answer's `data` is null. See docs/graphql.md.
 */
export function floodgateMercurius(app: MercuriusAppLike, options: GraphqlRateLimitOptions = {}): OperationLimiter {
  if (!app || typeof app.graphql?.addHook !== 'function') invalidOption('app', app, 'a Fastify instance with mercurius registered (await app.register(mercurius, ...) first)');
  const limiter = createOperationLimiter(options);
  const trustProxy = trustProxyOf(app.initialConfig.trustProxy);
  const admissions = new WeakMap<object, Admission>();
  const preExecution = async (schema: never, document: DocumentNode, context: MercuriusContextLike, variables: Record<string, unknown> | undefined) => {
    const request = context.reply.request;
    const operation = { schema, document, operationName: operationNameOf(request), variables };
    const admission = await limiter.begin({ ip: request.ip, headers: request.headers, trustProxy }, operation, context);
    admissions.set(context, admission);
    for (const [name, value] of admission.headers) context.reply.header(name, value);
    if (admission.kind === 'admitted') return undefined;
    return { document: inertDocument(document), errors: notRunResult(admission, 'none').errors ?? [] };
  };
  const onResolution = async (execution: ExecutionResult & { data?: unknown }, context: MercuriusContextLike) => {
    const admission = admissions.get(context);
    if (!admission) return;
    admissions.delete(context);
    if (admission.kind !== 'admitted') {
      execution.data = null;
      if (admission.kind === 'refused') context.reply.code(admission.refusal.status);
      else if (!execution.errors?.length) delete (execution as { errors?: unknown }).errors;
    }
    const cost = admission.kind === 'admitted' ? await admission.finish(execution.data) : admission.cost;
    (execution as { extensions?: Record<string, unknown> }).extensions = { ...execution.extensions, cost };
  };
  app.graphql.addHook('preExecution', preExecution as unknown as Hook);
  app.graphql.addHook('onResolution', onResolution as unknown as Hook);
  return limiter;
}
