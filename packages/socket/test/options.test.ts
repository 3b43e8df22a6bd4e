// Bad options for wsLimiter and socketIoLimiter: a FloodgateError at construction naming the option, the value and the valid range.
import { FloodgateError } from '@floodgate/core';
import { socketIoLimiter, wsLimiter } from '../src';

function thrown(make: () => unknown): FloodgateError {
  try {
    make();
  } catch (error) {
    if (error instanceof FloodgateError) return error;
    throw error;
  }
  throw new Error('no error');
}

test.each([
  ['no limit at all', {}, 'FG_INVALID_OPTION', 'messages'],
  ['an unknown option, with a suggestion', { messages: { limit: 5 }, onLimt: 'drop' }, 'FG_UNKNOWN_OPTION', 'onLimt'],
  ['an unknown option inside messages', { messages: { max: 5 } }, 'FG_UNKNOWN_OPTION', 'max'],
  ['a bad limit', { messages: { limit: 0 } }, 'FG_INVALID_OPTION', 'limit'],
  ['a bad onLimit', { messages: { limit: 5 }, onLimit: 'kick' }, 'FG_INVALID_OPTION', 'onLimit'],
  ['a close code outside 1008 and 3000-4999', { messages: { limit: 5 }, closeCode: 1000 }, 'FG_INVALID_OPTION', 'closeCode'],
  ['connections without a limit', { connections: {} }, 'FG_INVALID_OPTION', 'connections.limit'],
  ['a lease under 1 s', { connections: { limit: 3, leaseMs: 10 } }, 'FG_INVALID_OPTION', 'connections.leaseMs'],
  ['maxHoldMs under leaseMs', { connections: { limit: 3, leaseMs: '1m', maxHoldMs: '10s' } }, 'FG_INVALID_OPTION', 'connections.maxHoldMs'],
  ['a bad maxPending', { messages: { limit: 5 }, maxPending: 0 }, 'FG_INVALID_OPTION', 'maxPending'],
  ['a bad trustProxy entry', { messages: { limit: 5 }, trustProxy: ['not-an-ip'] }, 'FG_INVALID_OPTION', 'trustProxy'],
  ['a negative cost', { messages: { limit: 5 }, cost: -1 }, 'FG_INVALID_OPTION', 'cost'],
])('%s', (_, options, code, option) => {
  for (const make of [wsLimiter, socketIoLimiter]) {
    const error = thrown(() => make(options as never));
    expect(error.code).toBe(code);
    expect(error.option ?? '').toContain(option);
    expect(error.message).toMatch(/See .*errors\.md#fg-/);
  }
});

test('socketIoLimiter: a bad cost per event names the event', () => {
  expect(thrown(() => socketIoLimiter({ messages: { limit: 5 }, cost: { upload: 1.5 } })).option).toBe('cost.upload');
});
