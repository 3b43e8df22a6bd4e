// One instance of the socket fleet test: a ws server and a Socket.IO server on a shared Redis (RedisStore), reporting its counts to the parent over IPC.
import { RedisStore } from '@floodgate/core';
import { Redis } from 'ioredis';
import { startIo, startWs, type Counts } from '../harness';

export interface FleetSetup {
  type: 'setup';
  redisPort: number;
  prefix: string;
  leaseMs: number;
}
export type FleetReply =
  | { type: 'ready'; wsPort: number; ioPort: number }
  | { type: 'counts'; ws: Omit<Counts, 'limited'> & { limited: number }; io: Omit<Counts, 'limited'> & { limited: number } }
  | { type: 'error'; message: string };

const send = (message: FleetReply) => process.send?.(message);
const summary = (c: Counts) => ({ admitted: c.admitted, closed: c.closed, limited: c.limited.length });

async function onSetup(setup: FleetSetup): Promise<{ ws: Counts; io: Counts }> {
  const client = new Redis({ host: '127.0.0.1', port: setup.redisPort, maxRetriesPerRequest: 1, autoResendUnfulfilledCommands: false });
  client.on('error', () => undefined);
  await client.ping();
  const store = new RedisStore({ client, timeoutMs: 5_000 });
  // The figure: 50 messages per 10 s per identity, 3 open connections per identity; every
  // connection of the test comes from 127.0.0.1, so all are one identity on both instances.
  const common = {
    store,
    messages: { limit: 50, windowMs: '10s' as const, algorithm: 'sliding-window-log' as const },
    connections: { limit: 3, leaseMs: setup.leaseMs },
    onLimit: 'error' as const,
    maxPending: 500,
    failMode: 'closed' as const,
  };
  const ws = await startWs({ ...common, prefix: `${setup.prefix}-ws` });
  const io = await startIo({ ...common, prefix: `${setup.prefix}-io` });
  send({ type: 'ready', wsPort: ws.port, ioPort: io.port });
  return { ws: ws.counts, io: io.counts };
}

let counts: { ws: Counts; io: Counts } | undefined;
process.on('message', (message: { type: string }) => {
  if (message.type === 'setup') {
    onSetup(message as FleetSetup).then(
      (c) => (counts = c),
      (error: unknown) => send({ type: 'error', message: String(error) }),
    );
  } else if (message.type === 'counts' && counts) {
    send({ type: 'counts', ws: summary(counts.ws), io: summary(counts.io) });
  } else if (message.type === 'exit') {
    process.exit(0);
  }
});
