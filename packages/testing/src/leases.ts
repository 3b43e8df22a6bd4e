// Leases held in Redis right now: the members of lease sorted sets whose expiry is after Redis's own clock (TIME), never the test's.
import type { Redis } from 'ioredis';

/**
 * The leases held now over every key matching `pattern` (e.g. `${prefix}:*:concurrency.cc`, or
 * `${prefix}:*:fleet.cc`): each key's members scored after Redis TIME in ms, the clock the lease
 * scripts read. Keys are found with SCAN, so a busy test server is not blocked.
 */
export async function leasesHeld(client: Redis, pattern: string): Promise<number> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [nextCursor, batch] = await client.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    keys.push(...batch);
    cursor = nextCursor;
  } while (cursor !== '0');
  const [seconds, micros] = await client.time();
  const nowMs = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  let total = 0;
  for (const key of new Set(keys)) total += await client.zcount(key, `(${nowMs}`, '+inf');
  return total;
}
