// The shared usage-route and reserve-then-settle suite through @floodgate/express 5 on a real Redis.
import { runUsageSettleSuite } from '@floodgate/adapter-suites';
import { expressHarness } from './harness';

runUsageSettleSuite(expressHarness(5));
