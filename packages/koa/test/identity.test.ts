// Identity through Koa 3 with @koa/router: app.proxy, /64 rotation, IPv4-mapped addresses, cheap rejections in Redis; and the attack suite.
import { runAttackSuite, runIdentitySuite } from '@floodgate/adapter-suites';
import { koaHarness } from './harness';

runIdentitySuite(koaHarness);
runAttackSuite(koaHarness);
