// Tells the conformance harness whether Redis expired, on its own real clock, a key a scenario wrote (keyspace notifications).
import type { RedisServer } from '@floodgate/testing';

/**
 * A scenario drives the store on a fake clock, but Redis still expires keys in real time: the
 * scenarios write only states that matter for far longer (fake ms) than the real ms a scenario
 * takes. On a machine slowed many times over that premise can fail (a token bucket's 5 s TTL
 * passing between two steps). This watch names when it did: Redis publishes an `expired` event for
 * every key it expires, lazily or actively, and the harness runs a scenario again only when one of
 * its own keys expired while it ran, never on a failure alone.
 */
export interface ExpiryWatch {
  /** Whether Redis expired a key that starts with `prefix` since the watch began. */
  expiredUnder(prefix: string): Promise<boolean>;
  close(): void;
}

export async function watchExpiry(server: RedisServer): Promise<ExpiryWatch> {
  await server.command(['CONFIG', 'SET', 'notify-keyspace-events', 'Ex']);
  const sub = server.client({ autoResendUnfulfilledCommands: false });
  const expired: string[] = [];
  sub.on('message', (_channel: string, key: string) => expired.push(key));
  await sub.subscribe('__keyevent@0__:expired');
  return {
    async expiredUnder(prefix) {
      // Redis writes a connection's messages in order: once this PING's reply is back, every event
      // published before it was sent (the expiry behind a failed step included) has been read.
      await sub.ping();
      return expired.some((key) => key.startsWith(prefix));
    },
    close: () => sub.disconnect(),
  };
}
