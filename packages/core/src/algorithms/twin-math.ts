// Numeric helpers the twins share, written to match the Lua prelude exactly.

/** A TTL is always a positive whole number of ms (Lua: ttl). */
export function ttl(ms: number): number {
  return Math.max(1, Math.ceil(ms));
}
