// The shared usage-route and reserve-then-settle suite through @floodgate/fastify on a real Redis.
import { runUsageSettleSuite } from '@floodgate/adapter-suites';
import { fastifyHarness } from './harness';

runUsageSettleSuite(fastifyHarness);
