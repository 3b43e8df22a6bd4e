// DELIBERATELY WRONG: the get-then-incr limiter many apps write first, kept here to race against Floodgate.
import type { Redis } from 'ioredis';

/**
 * Reads the count, then increments it in a second round trip. Concurrent requests all read the same
 * old count before any increment lands, so all of them pass the check: the limit is not enforced
 * under load. Never use this; Floodgate's scripts check and count in one atomic step.
 */
export async function naiveConsume(client: Redis, key: string, limit: number, windowMs: number): Promise<boolean> {
  const count = Number((await client.get(key)) ?? 0);
  if (count >= limit) return false;
  const after = await client.incr(key);
  if (after === 1) await client.pexpire(key, windowMs);
  return true;
}
