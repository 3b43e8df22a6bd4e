// Bad options fail at construction with FloodgateError: the option, the value and the valid range, a stable code; a bad estimate at request time rejects with FG_INVALID_COST.
import { buildSchema, parse } from 'graphql';
import { FloodgateError } from '@floodgate/core';
import { createOperationLimiter, floodgateApolloPlugin, floodgateMercurius, useFloodgate, type GraphqlRateLimitOptions } from '../src';

function errorOf(make: () => unknown): FloodgateError {
  try {
    make();
  } catch (error) {
    expect(error).toBeInstanceOf(FloodgateError);
    return error as FloodgateError;
  }
  throw new Error('no error thrown');
}

const bad: [string, GraphqlRateLimitOptions | Record<string, unknown>, string, RegExp][] = [
  ['maxOperationCost above the smallest limit', { limit: 100, maxOperationCost: 101 }, 'FG_INVALID_OPTION', /maxOperationCost 101 .*from 1 to 100/],
  ['maxOperationCost not a whole number', { maxOperationCost: 2.5 }, 'FG_INVALID_OPTION', /maxOperationCost.*2\.5.*whole number/],
  ['a negative objectWeight', { objectWeight: -1 }, 'FG_INVALID_OPTION', /objectWeight.*-1/],
  ['defaultListSize NaN', { defaultListSize: Number.NaN }, 'FG_INVALID_OPTION', /defaultListSize.*NaN/],
  ['maxDepth 0', { maxDepth: 0 }, 'FG_INVALID_OPTION', /maxDepth.*from 1 to 1000/],
  ['maxFields too large', { maxFields: 1e7 }, 'FG_INVALID_OPTION', /maxFields/],
  ['a dryRunHeader with a space', { dryRunHeader: 'x dry' }, 'FG_INVALID_OPTION', /dryRunHeader/],
  ['estimate not a function', { estimate: 5 }, 'FG_INVALID_OPTION', /estimate/],
  ["actual 'request'", { actual: 'request' }, 'FG_INVALID_OPTION', /actual.*'response', false/],
  ['trustProxy a string', { trustProxy: '10.0.0.0/8' }, 'FG_INVALID_OPTION', /trustProxy/],
  ['an HTTP cost', { cost: 5 }, 'FG_INVALID_OPTION', /cost.*fields cost/],
  ['countOnly', { countOnly: 'failed' }, 'FG_INVALID_OPTION', /countOnly/],
  ['a typo the core names', { limt: 5 }, 'FG_UNKNOWN_OPTION', /limt.*limit/],
  ['a bad core option', { limit: -3 }, 'FG_INVALID_OPTION', /limit/],
];

describe('construction', () => {
  it.each(bad)('%s', (_name, options, code, message) => {
    const error = errorOf(() => createOperationLimiter(options as GraphqlRateLimitOptions));
    expect(error.code).toBe(code);
    expect(error.message).toMatch(message);
    expect(error.message).toMatch(/See .*errors\.md#fg-/);
  });

  it('the plugins parse their options when they are made, not at the first request', () => {
    expect(errorOf(() => useFloodgate({ maxDepth: 0 })).code).toBe('FG_INVALID_OPTION');
    expect(errorOf(() => floodgateMercurius({} as never, {})).message).toMatch(/mercurius registered/);
    expect(errorOf(() => floodgateApolloPlugin({ requestOf: 'req' as never })).message).toMatch(/requestOf.*"req".*a function/);
    expect(errorOf(() => floodgateApolloPlugin({ mutationWeight: -1 })).code).toBe('FG_INVALID_OPTION');
  });
});

it('an estimate function that returns a bad cost rejects the operation with FG_INVALID_COST', async () => {
  const schema = buildSchema('type Query { a: Int }');
  for (const value of [-1, 1.5, Number.NaN, '3', undefined]) {
    const limiter = createOperationLimiter({ estimate: () => value as number });
    await expect(limiter.begin({ ip: '127.0.0.1', headers: {} }, { schema, document: parse('{ a }') }, {})).rejects.toMatchObject({ code: 'FG_INVALID_COST' });
  }
});
