// nextTurn: setImmediate where the runtime has it (Node, Bun, Deno), else a zero timer (a Worker without nodejs_compat's globals), so the end of a turn is reached on every runtime.
export const nextTurn: (callback: () => void) => unknown =
  typeof setImmediate === 'function' ? (callback) => setImmediate(callback) : (callback) => setTimeout(callback, 0);
