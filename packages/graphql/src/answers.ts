// The answers every plugin gives for an operation that did not run: a refusal's GraphQL error, a dry run's cost, in one shape.
import { GraphQLError, type ExecutionResult, type GraphQLErrorExtensions } from 'graphql';
import type { Admission, CostExtension, Refusal } from './operation-limiter';

/** A refusal as the GraphQL error every plugin answers with: its code and the wait in ms (null when unknown). */
export function refusalError(refusal: Refusal, http: HttpExtension): GraphQLError {
  const extensions: Record<string, unknown> = { code: refusal.code, retryAfterMs: refusal.retryAfterMs };
  // The status for the servers that read it from the error (Yoga; Apollo Server, which wants a Map for headers); every header goes on the response through the plugin itself.
  if (http === 'status') extensions.http = { status: refusal.status };
  else if (http === 'status-map') extensions.http = { status: refusal.status, headers: new Map() };
  return new GraphQLError(refusal.message, { extensions: extensions as GraphQLErrorExtensions });
}

/** How a server reads an HTTP status from an error's extensions: 'status' (Yoga), 'status-map' (Apollo Server), 'none' (Mercurius, where the plugin sets it). */
export type HttpExtension = 'status' | 'status-map' | 'none';

/** The result of an operation that did not run: the refusal's error (none for a dry run), and the cost. */
export function notRunResult(admission: Exclude<Admission, { kind: 'admitted' }>, http: HttpExtension): ExecutionResult {
  const cost: CostExtension = admission.cost;
  if (admission.kind === 'dry-run') return { data: null, extensions: { cost } };
  return { errors: [refusalError(admission.refusal, http)], extensions: { cost } };
}

export function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return value !== null && typeof value === 'object' && Symbol.asyncIterator in value;
}
