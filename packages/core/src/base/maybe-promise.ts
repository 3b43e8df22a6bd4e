// One test for "must this be waited for?", used wherever a value may or may not be a promise (ours or a caller's).

/**
 * True for a promise and for anything `await` would treat as one (an object or function with a
 * `then` method), so a caller's non-native thenable is waited for like a promise. A caller's value
 * narrowed here is waited for through `Promise.resolve(value)`, never by calling its `then` directly.
 */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value instanceof Promise ||
    (value !== null && (typeof value === 'object' || typeof value === 'function') && typeof (value as { then?: unknown }).then === 'function')
  );
}
