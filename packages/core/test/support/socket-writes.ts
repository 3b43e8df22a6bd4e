// Counts the writes an ioredis client's socket hands to the kernel: what one turn of RedisStore costs in write calls.

interface Socketish {
  _write: (...args: unknown[]) => unknown;
  _writev?: (...args: unknown[]) => unknown;
}

/** Counts the writes an ioredis client's socket hands to the kernel (one per _write or _writev). */
export function countWrites(client: unknown): { readonly count: number; restore(): void } {
  const stream = (client as { stream: Socketish }).stream;
  const own = { _write: Object.getOwnPropertyDescriptor(stream, '_write'), _writev: Object.getOwnPropertyDescriptor(stream, '_writev') };
  const counter = { count: 0 };
  const write = stream._write;
  const writev = stream._writev;
  stream._write = function (this: unknown, ...args: unknown[]) {
    counter.count++;
    return write.apply(this, args);
  };
  if (writev) {
    stream._writev = function (this: unknown, ...args: unknown[]) {
      counter.count++;
      return writev.apply(this, args);
    };
  }
  return {
    get count() {
      return counter.count;
    },
    restore() {
      for (const name of ['_write', '_writev'] as const) {
        const d = own[name];
        if (d) Object.defineProperty(stream, name, d);
        else delete (stream as Partial<Socketish>)[name];
      }
    },
  };
}
