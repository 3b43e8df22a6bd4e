// Child process of fleet-redis.test.ts: one application instance (its own process, connection and limiter, default failure options) that reports what it learned of its fleet and floods one subject on request.
import { Redis } from 'ioredis';
import { createLimiter, RedisStore, type Limiter } from '../src';

export interface FleetWorkerSetup {
  port: number;
  prefix: string;
  limit: number;
  announceMs: number;
}

export type FleetWorkerRequest = { type: 'instances' } | { type: 'flood'; subject: string; requests: number };

export interface FleetWorkerReply {
  instances?: number;
  flood?: { admitted: number; byReason: Record<string, number> };
  error?: string;
}

const setup = JSON.parse(process.argv[2]) as FleetWorkerSetup;
const client = new Redis({ host: '127.0.0.1', port: setup.port, autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 1 });
client.on('error', () => undefined);
// No failure option at all: what an app that sets none gets.
const limiter: Limiter = createLimiter({
  store: new RedisStore({ client, announceMs: setup.announceMs }),
  prefix: setup.prefix,
  limit: setup.limit,
  windowMs: '1h',
  logger: { warn() {}, error() {} },
});

async function handle(request: FleetWorkerRequest): Promise<FleetWorkerReply> {
  if (request.type === 'instances') return { instances: limiter.health().fleets?.[0]?.instances ?? undefined };
  // All at once, as a flood's requests are.
  const decisions = await Promise.all(Array.from({ length: request.requests }, () => limiter.consume(request.subject)));
  const byReason: Record<string, number> = {};
  for (const d of decisions) byReason[d.reason] = (byReason[d.reason] ?? 0) + 1;
  return { flood: { admitted: decisions.filter((d) => d.allowed).length, byReason } };
}

process.on('message', (request: FleetWorkerRequest) => {
  handle(request).then(
    (reply) => process.send!(reply),
    (error: unknown) => process.send!({ error: String((error as Error)?.stack ?? error) }),
  );
});
// The test process went away: never outlive it.
process.on('disconnect', () => process.exit(0));
process.send!({ ready: true });
