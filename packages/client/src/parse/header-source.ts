// One way to read a response's header fields, whatever holds them: fetch's Headers, undici's object, or a function.

/**
 * Response headers as a fetch `Headers`, as undici hands them to an interceptor (lower-case names,
 * a string or an array of strings per name), or a function that looks one name up.
 */
export type HeaderSource =
  | { get(name: string): string | null }
  | Readonly<Record<string, string | readonly string[] | undefined>>
  | ((name: string) => string | readonly string[] | null | undefined);

/** A field by its lower-case name: the lines of a repeated field joined with ', ' (RFC 9110 s5.3), or undefined. */
export type FieldLookup = (name: string) => string | undefined;

function joined(value: string | readonly string[] | null | undefined): string | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === 'string') return value;
  return value.length > 0 ? value.join(', ') : undefined;
}

export function fieldLookup(source: HeaderSource): FieldLookup {
  if (typeof source === 'function') return (name) => joined(source(name));
  if (typeof (source as { get?: unknown }).get === 'function') {
    const headers = source as { get(name: string): string | null };
    return (name) => joined(headers.get(name));
  }
  // A plain object: undici lower-cases names, a hand-made object may not.
  const record = source as Readonly<Record<string, string | readonly string[] | undefined>>;
  let lower: Map<string, string | readonly string[] | undefined> | undefined;
  return (name) => {
    const direct = record[name];
    if (direct !== undefined) return joined(direct);
    if (!lower) {
      lower = new Map();
      for (const key of Object.keys(record)) lower.set(key.toLowerCase(), record[key]);
    }
    return joined(lower.get(name));
  };
}
