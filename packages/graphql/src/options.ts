// The GraphQL plugins' options: everything an HTTP adapter takes, plus how an operation's cost is counted, parsed once at construction.
import { invalidOption, type HttpRateLimitOptions } from '@floodgate/core/http';
import type { CostSettings, OperationInput } from './cost/estimate';

/** What the `key`, `skip`, `estimate` and hook functions are given for one operation. */
export interface OperationRequest {
  /** The server's context value (Yoga's and Apollo's context object, Mercurius's context). */
  readonly context: unknown;
  readonly operation: OperationInput;
  /** The requested cost this operation reserves (0 for a dry run). */
  readonly cost: number;
}

/**
 * Every option an HTTP adapter takes (limit, windowMs, limits, store, prefix, failMode, settle,
 * apiKeyHeaders, resolveKey, key, skip, headers, onLimited, ...; `key` and the hooks get the
 * OperationRequest), except the ones about one HTTP response (`cost`, `countOnly`, `handler`,
 * `respondDirectly`), plus these. See docs/graphql.md.
 */
export interface GraphqlRateLimitOptions extends Omit<HttpRateLimitOptions<OperationRequest>, 'cost' | 'countOnly' | 'isFailure' | 'resetOnSuccess' | 'handler' | 'respondDirectly'> {
  /**
   * The most one operation may request: one above it is refused before execution (error code
   * MAX_COST_EXCEEDED) and charges nothing. A whole number from 1 to the smallest limit (a larger
   * cost could never be admitted). Default: the smallest limit.
   */
  maxOperationCost?: number;
  /** The requested cost from your own function instead of the directives: a whole number from 0 (FG_INVALID_COST otherwise). Default: @cost/@listSize. */
  estimate?: (operation: OperationInput, context: unknown) => number | Promise<number>;
  /**
   * The actual cost, settled after execution: 'response' counts the lists the response holds with
   * the same weights; a function of the operation and the result's `data`; false charges the
   * requested cost and settles nothing. Default 'response'.
   */
  actual?: 'response' | false | ((operation: OperationInput, data: unknown, context: unknown) => number);
  /** Weight of a field of object, interface or union type without `@cost`. Default 1. */
  objectWeight?: number;
  /** Weight of a scalar or enum field without `@cost`. Default 0. */
  leafWeight?: number;
  /** Weight of a mutation's root field without `@cost`. Default 10. */
  mutationWeight?: number;
  /** The assumed length of a list field without `@listSize` or a slicing argument. Default 10. */
  defaultListSize?: number;
  /** Deepest field nesting an operation's cost is computed for; deeper is refused (MAX_COST_EXCEEDED). From 1 to 1000. Default 64. */
  maxDepth?: number;
  /** Most fields (fragments expanded) one cost walk visits; more is refused (MAX_COST_EXCEEDED). From 1 to 1,000,000. Default 10,000. */
  maxFields?: number;
  /**
   * A request header that asks for the cost only: the operation is not executed and nothing is
   * charged; the answer carries `extensions.cost` (with `actualQueryCost` null). false: no dry run.
   * Default 'x-floodgate-dry-run'.
   */
  dryRunHeader?: string | false;
  /**
   * Yoga and Apollo (which have no trust-proxy setting): the proxies in front of the app, as IPs
   * and CIDR ranges; X-Forwarded-For is read only from them. Mercurius uses Fastify's `trustProxy`.
   * Default: none.
   */
  trustProxy?: readonly string[];
}

export interface ResolvedGraphqlOptions {
  readonly settings: CostSettings;
  readonly maxOperationCost: number | undefined;
  readonly estimate: GraphqlRateLimitOptions['estimate'];
  readonly actual: 'response' | false | ((operation: OperationInput, data: unknown, context: unknown) => number);
  readonly dryRunHeader: string | undefined;
  readonly trustProxy: readonly string[] | undefined;
}

/** This package's own option names; the rest go to the core's HTTP options (which name any unknown one). */
export const GRAPHQL_OPTION_NAMES = [
  'maxOperationCost',
  'estimate',
  'actual',
  'objectWeight',
  'leafWeight',
  'mutationWeight',
  'defaultListSize',
  'maxDepth',
  'maxFields',
  'dryRunHeader',
  'trustProxy',
] as const;

/** Options an HTTP adapter takes that mean nothing for an operation: named, not ignored. */
const NOT_FOR_GRAPHQL: Record<string, string> = {
  cost: 'no `cost`: an operation costs what its fields cost (`estimate` for your own function)',
  countOnly: 'no `countOnly`: the actual cost is settled after execution (`actual`)',
  isFailure: 'no `isFailure`: the actual cost is settled after execution (`actual`)',
  resetOnSuccess: 'no `resetOnSuccess` for GraphQL operations',
  handler: 'no `handler`: a refused operation is answered with a GraphQL error',
  respondDirectly: 'no `respondDirectly`: a refused operation is answered by the GraphQL server',
};

function number(option: string, value: unknown, fallback: number, min: number, max: number, whole: boolean): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max || (whole && !Number.isInteger(value))) {
    invalidOption(option, value, `${whole ? 'a whole number' : 'a number'} from ${min} to ${max}`);
  }
  return value;
}

/** Splits the caller's options (never mutated): this package's, parsed here, and the core's, parsed by createHttpLimiter. */
export function resolveGraphqlOptions(options: GraphqlRateLimitOptions): { own: ResolvedGraphqlOptions; core: HttpRateLimitOptions<OperationRequest> } {
  if (!options || typeof options !== 'object' || Array.isArray(options)) invalidOption('options', options, 'an object');
  for (const [name, why] of Object.entries(NOT_FOR_GRAPHQL)) if (name in options) invalidOption(name, (options as Record<string, unknown>)[name], why);
  const raw = options as Record<string, unknown>;
  const core: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(raw)) if (!(GRAPHQL_OPTION_NAMES as readonly string[]).includes(k)) core[k] = v;
  const o = options;
  if (o.estimate !== undefined && typeof o.estimate !== 'function') invalidOption('estimate', o.estimate, 'a function (operation, context) => cost');
  if (o.actual !== undefined && o.actual !== 'response' && o.actual !== false && typeof o.actual !== 'function') {
    invalidOption('actual', o.actual, "'response', false, or a function (operation, data, context) => cost");
  }
  const dry = o.dryRunHeader;
  if (dry !== undefined && dry !== false && (typeof dry !== 'string' || !/^[A-Za-z0-9-]{1,64}$/.test(dry))) {
    invalidOption('dryRunHeader', dry, 'a header name ([A-Za-z0-9-]{1,64}) or false');
  }
  if (o.trustProxy !== undefined && (!Array.isArray(o.trustProxy) || o.trustProxy.some((e) => typeof e !== 'string'))) {
    invalidOption('trustProxy', o.trustProxy, "a list of IPs and CIDR ranges such as ['10.0.0.0/8']");
  }
  const settings: CostSettings = {
    objectWeight: number('objectWeight', o.objectWeight, 1, 0, 1e6, false),
    leafWeight: number('leafWeight', o.leafWeight, 0, 0, 1e6, false),
    mutationWeight: number('mutationWeight', o.mutationWeight, 10, 0, 1e6, false),
    defaultListSize: number('defaultListSize', o.defaultListSize, 10, 0, 1e6, true),
    maxDepth: number('maxDepth', o.maxDepth, 64, 1, 1000, true),
    maxFields: number('maxFields', o.maxFields, 10_000, 1, 1_000_000, true),
  };
  const actual = o.actual ?? 'response';
  // Settling is what the actual cost is for: on unless the app charges the estimate only.
  if (actual !== false && core.settle === undefined) core.settle = {};
  if (core.group === undefined) core.group = 'graphql';
  const own: ResolvedGraphqlOptions = {
    settings,
    maxOperationCost: o.maxOperationCost === undefined ? undefined : number('maxOperationCost', o.maxOperationCost, 0, 1, Number.MAX_SAFE_INTEGER, true),
    estimate: o.estimate,
    actual,
    dryRunHeader: dry === false ? undefined : (dry ?? 'x-floodgate-dry-run').toLowerCase(),
    trustProxy: o.trustProxy,
  };
  return { own, core: core as HttpRateLimitOptions<OperationRequest> };
}
