// The shared usage-route and reserve-then-settle suite through @floodgate/hono on @hono/node-server and a real Redis.
import { runUsageSettleSuite } from '@floodgate/adapter-suites';
import { honoHarness } from './harness';

runUsageSettleSuite(honoHarness);
