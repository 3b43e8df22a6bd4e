// Identity through Hono: the connection info helper, a trusted proxy by option, /64 rotation, IPv4-mapped addresses, cheap rejections in Redis; and the attack suite.
import { runAttackSuite, runIdentitySuite } from '@floodgate/adapter-suites';
import { honoHarness } from './harness';

runIdentitySuite(honoHarness);
runAttackSuite(honoHarness);
