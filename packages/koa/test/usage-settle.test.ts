// The shared usage-route and reserve-then-settle suite through @floodgate/koa on a real Redis.
import { runUsageSettleSuite } from '@floodgate/adapter-suites';
import { koaHarness } from './harness';

runUsageSettleSuite(koaHarness);
