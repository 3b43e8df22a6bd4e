// Fleet load shedding on a real Redis: one in-flight budget for two instances, background shed first, default next, critical last.
import { RedisStore, type RateLimitEvent } from '../src';
import { createHttpLimiter, type HttpLimiter, type HttpResult } from '../src/http';
import { leasesHeld, pollUntil, startRedis, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import { AggregationTemporality, MeterProvider, MetricReader, type DataPoint } from '@opentelemetry/sdk-metrics';

const silent = { warn() {}, error() {} };
let redis: RedisServer;
let client: Redis;
beforeAll(async () => {
  redis = await startRedis();
  client = redis.client({ autoResendUnfulfilledCommands: false });
});
afterAll(async () => {
  client.disconnect();
  await redis.stop();
});

class TestReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}
const reader = new TestReader();
const meterProvider = new MeterProvider({ readers: [reader] });

/** What onLimited was told, by every instance. */
const limited: RateLimitEvent[] = [];

/** An instance's app-level limiter, with one route per class. */
function instance(prefix: string) {
  // A loaded 2-core machine can take past the 100 ms default: a late answer must not turn into a fail-open admission here.
  const http = createHttpLimiter({
    store: new RedisStore({ client, timeoutMs: 5_000 }),
    prefix,
    logger: silent,
    limit: 1000,
    failMode: 'closed',
    fleet: { limit: 10 },
    meterProvider,
    onLimited: (e) => void limited.push(e),
  });
  return {
    critical: http.route({ priority: 'critical' })!,
    default: http.route({ priority: 'default' })!,
    background: http.route({ priority: 'background' })!,
  };
}
/** Waits until the fleet's key holds `want` leases (a release is sent when the response ends, not awaited by it). */
const inFlight = (prefix: string, want: number) =>
  pollUntil(
    async () => ((await leasesHeld(client, `${prefix}:*:fleet.cc`)) === want ? true : undefined),
    { timeoutMs: 5_000, what: `${want} fleet slots held` },
  );
let n = 0;
const facts = () => ({ ip: `10.0.0.${++n % 250}`, headers: {}, method: 'GET', route: '/r' });
const ask = (h: HttpLimiter, held: HttpResult[]) =>
  h.handle(facts(), {}).then((r) => {
    if (r.status === 'next') held.push(r);
    return r.status;
  });

it('holds one budget of 10 in flight across instances: background up to 5, default up to 8, critical up to 10; finished requests free their slots', async () => {
  const prefix = `fleet-${Math.random().toString(36).slice(2, 8)}`;
  const a = instance(prefix);
  const b = instance(prefix);
  const held: HttpResult[] = [];
  // Background fills its share from both instances; the 6th is shed, fleet-wide.
  const background = [];
  for (let i = 0; i < 6; i++) background.push(await ask(i % 2 ? b.background : a.background, held));
  expect(background).toEqual(['next', 'next', 'next', 'next', 'next', 503]);
  // Default may go on to 8 in flight, then is shed too.
  const defaults = [];
  for (let i = 0; i < 4; i++) defaults.push(await ask(i % 2 ? a.default : b.default, held));
  expect(defaults).toEqual(['next', 'next', 'next', 503]);
  // Critical takes the reserve: 10 in all, then it too is refused.
  const critical = [await ask(a.critical, held), await ask(b.critical, held), await ask(a.critical, held)];
  expect(critical).toEqual(['next', 'next', 503]);
  const refused = await a.background.handle(facts(), {});
  expect(refused.status).toBe(503);
  expect(JSON.parse(refused.body as string)).toMatchObject({ status: 503, type: expect.stringContaining('temporary-reduced-capacity') });
  expect(refused.decision?.reason).toBe('shed');
  // Requests finish (settle: the response ended): their slots come back, to every class.
  for (const r of held.splice(0, 6)) r.settle?.(200);
  await inFlight(prefix, 4);
  expect(await ask(b.background, held)).toBe('next');
  for (const r of held.splice(0)) r.settle?.(undefined); // a closed connection frees it too
  await inFlight(prefix, 0);
  const again = [];
  for (let i = 0; i < 6; i++) again.push(await ask(a.background, held));
  expect(again).toEqual(['next', 'next', 'next', 'next', 'next', 503]);
  for (const r of held.splice(0)) r.settle?.(200);
  // floodgate.shed counts each refusal by class and by what shed it: 3 background (one per probe above and the last), 1 default, 1 critical.
  const { resourceMetrics } = await reader.collect();
  const shed = resourceMetrics.scopeMetrics.flatMap((m) => m.metrics).find((m) => m.descriptor.name === 'floodgate.shed')!;
  const byClass: Record<string, number> = {};
  for (const p of shed.dataPoints as DataPoint<number>[]) byClass[String(p.attributes['floodgate.priority'])] = (byClass[String(p.attributes['floodgate.priority'])] ?? 0) + p.value;
  expect(byClass).toEqual({ background: 3, default: 1, critical: 1 });
  expect(new Set(shed.dataPoints.map((p) => p.attributes['floodgate.shed.by']))).toEqual(new Set(['fleet']));
  // floodgate.decisions counts them too, as denials of the fleet's own lease limiter (scope '<fleet>', policy 'fleet').
  const decisions = resourceMetrics.scopeMetrics.flatMap((m) => m.metrics).find((m) => m.descriptor.name === 'floodgate.decisions')!;
  const fleetDenied = (decisions.dataPoints as DataPoint<number>[]).filter((p) => p.attributes['floodgate.scope'] === '<fleet>' && p.attributes['floodgate.outcome'] === 'denied');
  expect(fleetDenied.reduce((n, p) => n + p.value, 0)).toBe(5);
  expect(new Set(fleetDenied.map((p) => p.attributes['floodgate.policy']))).toEqual(new Set(['fleet']));
  // onLimited saw each of the 5 refusals, as a shed decision of the route's scope that drew nothing.
  expect(limited).toHaveLength(5);
  for (const e of limited) expect(e).toMatchObject({ scope: 'GET /r', cost: 0, identity: 'none', decision: { allowed: false, reason: 'shed' } });
});

it('refuses a fleet on a route and shares out of range, naming the option', () => {
  const http = createHttpLimiter({ logger: silent, fleet: { limit: 10 } });
  expect(() => http.route({ fleet: { limit: 5 } })).toThrow(/`fleet`.*app-level limiter/);
  expect(() => createHttpLimiter({ fleet: { limit: 10, shares: { default: 0.5, background: 0.7 } } })).toThrow(/`fleet.shares.background`: got 0.7; expected at most fleet.shares.default \(0.5\)/);
  expect(() => createHttpLimiter({ fleet: { limit: 0 } })).toThrow(/`fleet.limit`/);
  expect(() => createHttpLimiter({ fleet: { limit: 10, shares: { critical: 1 } } as never })).toThrow(/critical/);
});
