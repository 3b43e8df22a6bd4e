// floodgateMercurius: Mercurius hooks: reserve an operation's cost in preExecution (an operation refused or dry-run runs only `__typename`), settle the actual cost in onResolution.
import { Kind, parse, type DocumentNode, type ExecutionResult } from 'graphql';
import { invalidOption, trustProxyOf } from '@floodgate/core/http';
import { notRunResult, refusalError } from './answers';
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
  readonly graphql: { addHook(name: 'preExecution' | 'onResolution' | 'preSubscriptionExecution' | 'onSubscriptionResolution' | 'onSubscriptionEnd', hook: Hook): void };
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
  addSubscriptionHooks(app, limiter, trustProxy);
  return limiter;
}

/** One subscription's state: the facts it was admitted under, and whether its first event (which settles the reservation) has come. */
interface Subscription {
  readonly facts: { ip: string; headers: FastifyRequestLike['headers']; trustProxy: ReturnType<typeof trustProxyOf> };
  readonly operation: { schema: never; document: DocumentNode };
  admission: Admission | undefined;
}

/**
 * Subscriptions over Mercurius's WebSocket: the requested cost is reserved when one starts (a
 * refusal is the subscription's error), its first event settles it, each later event is charged
 * its own cost, and one that does not fit is sent as the THROTTLED error in place of its data.
 */
function addSubscriptionHooks(app: MercuriusAppLike, limiter: OperationLimiter, trustProxy: ReturnType<typeof trustProxyOf>): void {
  // Per connection context, then per subscription id; ended subscriptions are forgotten (onSubscriptionEnd), a closed connection's context with it.
  const subscriptions = new WeakMap<object, Map<unknown, Subscription>>();
  const pre = async (schema: never, document: DocumentNode, context: { request: FastifyRequestLike }, id: unknown) => {
    const facts = { ip: context.request.ip, headers: context.request.headers, trustProxy };
    const operation = { schema, document };
    const admission = await limiter.begin(facts, operation, context);
    if (admission.kind === 'dry-run') throw refusalError({ code: 'BAD_REQUEST', message: 'A dry run answers queries and mutations over HTTP, not subscriptions', status: 400, retryAfterMs: null }, 'none');
    if (admission.kind === 'refused') throw refusalError(admission.refusal, 'none');
    let byId = subscriptions.get(context);
    if (!byId) subscriptions.set(context, (byId = new Map()));
    byId.set(id, { facts, operation, admission });
  };
  const onEvent = async (execution: ExecutionResult & { data?: unknown }, context: object, id: unknown) => {
    const sub = subscriptions.get(context)?.get(id);
    if (!sub) return;
    const first = sub.admission;
    sub.admission = undefined;
    const charged = first ?? (await limiter.event(sub.facts, sub.operation, context, execution.data));
    const cost = first?.kind === 'admitted' ? await first.finish(execution.data) : charged.cost;
    if (charged.kind === 'refused') {
      execution.data = null;
      (execution as { errors?: unknown[] }).errors = [refusalError(charged.refusal, 'none')];
    }
    (execution as { extensions?: Record<string, unknown> }).extensions = { ...execution.extensions, cost };
  };
  const onEnd = async (context: object, id: unknown) => void subscriptions.get(context)?.delete(id);
  app.graphql.addHook('preSubscriptionExecution', pre as unknown as Hook);
  app.graphql.addHook('onSubscriptionResolution', onEvent as unknown as Hook);
  app.graphql.addHook('onSubscriptionEnd', onEnd as unknown as Hook);
}
