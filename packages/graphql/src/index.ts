// @floodgate/graphql: GraphQL operations limited by cost over time (reserve the requested cost, settle the actual), as plugins for GraphQL Yoga/Envelop, Apollo Server and Mercurius.
export { useFloodgate } from './yoga';
export { floodgateApolloPlugin } from './apollo';
export type { ApolloRateLimitOptions } from './apollo';
export { floodgateMercurius } from './mercurius';
export type { MercuriusAppLike } from './mercurius';
export { createOperationLimiter, throttleStatusOf } from './operation-limiter';
export type { Admission, CostExtension, HttpFacts, OperationLimiter, Refusal, ThrottleStatus } from './operation-limiter';
export { refusalError } from './answers';
export type { GraphqlRateLimitOptions, OperationRequest } from './options';
export { estimateCost, actualCost, COST_CAP } from './cost/estimate';
export type { CostSettings, Estimate, OperationInput } from './cost/estimate';
export { COST_DIRECTIVES_SDL } from './cost/directives';
export type { Decision, Health, HealthOptions, SettleResult } from '@floodgate/core';
