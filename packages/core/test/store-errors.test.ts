// The failure path's store errors: made without a stack where they come by the hundreds (a timeout per call under a flood), and still the same FloodgateErrors.
import { FloodgateError } from '../src';
import { StoreTimeout, withDeadline } from '../src/base/deadline';
import { withoutStack } from '../src/base/errors';

describe('withoutStack', () => {
  it('makes an error whose stack is its first line only, and restores the stack trace limit', () => {
    const before = Error.stackTraceLimit;
    const error = withoutStack(() => new FloodgateError('FG_STORE_OVERLOADED', 'busy'));
    expect(error.stack).toBe(`FloodgateError: ${error.message}`);
    expect(error.message).toBe('busy [FG_STORE_OVERLOADED] See node_modules/@floodgate/core/docs/errors.md#fg-store-overloaded');
    expect(Error.stackTraceLimit).toBe(before);
    // Errors made elsewhere keep their stacks.
    expect(new FloodgateError('FG_STORE_TIMEOUT', 'x').stack!.split('\n').length).toBeGreaterThan(1);
  });

  it('restores the limit when making the error throws', () => {
    const before = Error.stackTraceLimit;
    expect(() =>
      withoutStack(() => {
        throw new Error('in the making');
      }),
    ).toThrow('in the making');
    expect(Error.stackTraceLimit).toBe(before);
  });

  it("a deadline's timeout, and each part of it, carry no stack but the late answer", async () => {
    let answer!: (value: number[]) => void;
    const late = new Promise<number[]>((resolve) => (answer = resolve));
    const error = await withDeadline(late, 5, 'Redis').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreTimeout);
    const timeout = error as StoreTimeout<number[]>;
    expect(timeout.code).toBe('FG_STORE_TIMEOUT');
    expect(timeout.stack).toBe(`FloodgateError: ${timeout.message}`);
    const part = timeout.part((results) => results[1]);
    expect(part.stack).toBe(`FloodgateError: ${part.message}`);
    answer([7, 8]);
    await expect(part.late).resolves.toBe(8);
  });
});
