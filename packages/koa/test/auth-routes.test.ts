// Auth routes through Koa 3 on a real Redis: count by outcome, an account key, reset on success, allowList and skip.
import { runAuthRouteSuite } from '@floodgate/adapter-suites';
import { koaHarness } from './harness';

runAuthRouteSuite(koaHarness);
