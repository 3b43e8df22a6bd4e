// Redis keys: `<prefix>:{<digest of scope + identity>}:<policy>`. Raw identities never reach Redis.
import { createHash } from 'node:crypto';

/**
 * The subject part of every key of one caller in one scope: a fixed-length digest inside a hash
 * tag, so a key's length is bounded, no input can inject `:` or `{}`, a Redis dump shows no API
 * key or IP, and all keys of one subject live in one Redis Cluster slot.
 */
export function subjectKey(prefix: string, scope: string, identity: string): string {
  const digest = createHash('sha256').update(scope).update('\u0000').update(identity).digest('base64url');
  return `${prefix}:{${digest.slice(0, 22)}}`;
}
